// Sums and maxima over a workgroup of exactly REDUCE_SIZE invocations (64 unless the shader
// defines it first; a power of two) through shared memory (portable: no assumption on the
// subgroup size, which is 8 on lavapipe and 32/64 on GPUs). Every invocation must call these
// (they contain barriers) and every one gets the result.
#ifndef REDUCE_SIZE
#define REDUCE_SIZE 64u
#endif
shared float reduce_scratch[REDUCE_SIZE];

float workgroup_sum(float value) {
  uint t = gl_LocalInvocationIndex;
  reduce_scratch[t] = value;
  barrier();
  for (uint s = REDUCE_SIZE / 2u; s > 0u; s >>= 1) {
    if (t < s) reduce_scratch[t] += reduce_scratch[t + s];
    barrier();
  }
  float result = reduce_scratch[0];
  barrier();
  return result;
}

float workgroup_max(float value) {
  uint t = gl_LocalInvocationIndex;
  reduce_scratch[t] = value;
  barrier();
  for (uint s = REDUCE_SIZE / 2u; s > 0u; s >>= 1) {
    if (t < s) reduce_scratch[t] = max(reduce_scratch[t], reduce_scratch[t + s]);
    barrier();
  }
  float result = reduce_scratch[0];
  barrier();
  return result;
}

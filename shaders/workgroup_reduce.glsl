// Sums and maxima over a workgroup of exactly 64 invocations through shared memory (portable:
// no assumption on the subgroup size, which is 8 on lavapipe and 32/64 on GPUs). Every
// invocation must call these (they contain barriers) and every one gets the result.
shared float reduce_scratch[64];

float workgroup_sum(float value) {
  uint t = gl_LocalInvocationIndex;
  reduce_scratch[t] = value;
  barrier();
  for (uint s = 32u; s > 0u; s >>= 1) {
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
  for (uint s = 32u; s > 0u; s >>= 1) {
    if (t < s) reduce_scratch[t] = max(reduce_scratch[t], reduce_scratch[t + s]);
    barrier();
  }
  float result = reduce_scratch[0];
  barrier();
  return result;
}

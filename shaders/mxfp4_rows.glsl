// MXFP4 expert rows read in place, 16 bytes at a time, for kernels of 256 invocations laid out as
// 8 groups of 32 lanes, each group owning one output row (expert_mlp1_swiglu, expert_mlp2).
// Blocks [E, rows, in/32, 16] bytes (low nibble = even element), scales [E, rows, in/32] bytes
// (value 2^(s-127)). The vector is read as vec4s; lane l takes blocks l, l + 32, ... so one
// 32-lane load instruction covers 512 consecutive bytes of a row.

#ifndef kMaxSums
#define kMaxSums 2u
#endif
shared float fp4_values[16];
shared float lane_sums[kMaxSums][256];

// Fills the FP4 table (shared memory: dynamic indexing into a constant array can spill).
void load_fp4_table() {
  if (gl_LocalInvocationIndex < 16u) {
    const float values[16] = float[16](0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
                                       -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0);
    fp4_values[gl_LocalInvocationIndex] = values[gl_LocalInvocationIndex];
  }
  barrier();
}

// 8 elements (one word of 4 bytes, low nibble first) against two vec4s of the vector.
float fp4_word_dot(uint word, vec4 a, vec4 b) {
  return fp4_values[word & 15u] * a.x + fp4_values[(word >> 4) & 15u] * a.y +
         fp4_values[(word >> 8) & 15u] * a.z + fp4_values[(word >> 12) & 15u] * a.w +
         fp4_values[(word >> 16) & 15u] * b.x + fp4_values[(word >> 20) & 15u] * b.y +
         fp4_values[(word >> 24) & 15u] * b.z + fp4_values[word >> 28] * b.w;
}

// DEFINE_MXFP4_BLOCK_DOT(fn, blocks4, scale_words, vec4s) defines
// `float fn(uint block, uint vec4_index)`: MXFP4 block number `block` (of the whole tensor) times
// the 32 vector values starting at vec4s[vec4_index].
#define DEFINE_MXFP4_BLOCK_DOT(fn, blocks4, scale_words, vec4s)                       \
  float fn(uint block, uint v) {                                                     \
    uvec4 q = blocks4[block];                                                        \
    uint scale_byte = (scale_words[block >> 2] >> ((block & 3u) * 8u)) & 0xFFu;      \
    float partial = fp4_word_dot(q.x, vec4s[v], vec4s[v + 1u]) +                      \
                    fp4_word_dot(q.y, vec4s[v + 2u], vec4s[v + 3u]) +                 \
                    fp4_word_dot(q.z, vec4s[v + 4u], vec4s[v + 5u]) +                 \
                    fp4_word_dot(q.w, vec4s[v + 6u], vec4s[v + 7u]);                  \
    return ldexp(partial, int(scale_byte) - 127);                                    \
  }

// Sums over the 32 lanes of each group of `count` (<= kMaxSums) values per invocation at once,
// written to lane_sums[i][t] by the caller; one tree for all of them. Every invocation must call
// it (barriers); afterwards lane_sums[i][t & ~31] holds group (t / 32)'s total of value i.
void lane_group_sums(uint count) {
  uint t = gl_LocalInvocationIndex;
  barrier();
  for (uint s = 16u; s > 0u; s >>= 1) {
    if ((t & 31u) < s)
      for (uint i = 0u; i < count; ++i) lane_sums[i][t] += lane_sums[i][t + s];
    barrier();
  }
}

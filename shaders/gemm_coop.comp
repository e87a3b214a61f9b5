#version 450
#extension GL_GOOGLE_include_directive : require
// gemm.comp on cooperative matrices (the arguments and grid are the same; the launcher picks this
// one where the device offers fp16 cooperative matrices, for BF16, F16 and Q8_0 weights):
// C[m, n] (+)= A[m] . W[n] (+ bias[n]). Each step's global loads are issued before the previous
// step's products (raw W bytes in registers, decoded after them).
#include "common.glsl"
layout(local_size_x = COOP_WORKGROUP_SIZE) in;
layout(push_constant) uniform Push { GemmArgs args; };
#include "coop_tile.glsl"

// 16 raw weight values at element `index` (a multiple of 16): BF16/F16 as two uvec4, Q8_0 as
// one uvec4 of quants and the word holding its block's scale.
void load_raw_w(uint index, out uvec4 r0, out uvec4 r1, out uint scale_word) {
  if (ENCODING == ENC_Q8_0) {
    r0 = QuadsIn(args.weight).v[index >> 4];
    r1 = uvec4(0u);
    scale_word = WordsIn(args.scales).v[index >> 6];
  } else {
    r0 = QuadsIn(args.weight).v[index >> 3];
    r1 = QuadsIn(args.weight).v[(index >> 3) + 1u];
    scale_word = 0u;
  }
}
void decode_raw_w(uint index, uvec4 r0, uvec4 r1, uint scale_word, out vec4 v[4]) {
  if (ENCODING == ENC_Q8_0) {
    float d = unpackHalf2x16(((index >> 5) & 1u) != 0u ? scale_word >> 16 : scale_word).x;
    v[0] = d * int8x4(r0.x);
    v[1] = d * int8x4(r0.y);
    v[2] = d * int8x4(r0.z);
    v[3] = d * int8x4(r0.w);
  } else if (ENCODING == ENC_F16) {
    v[0] = f16_low_high(r0.x, r0.y);
    v[1] = f16_low_high(r0.z, r0.w);
    v[2] = f16_low_high(r1.x, r1.y);
    v[3] = f16_low_high(r1.z, r1.w);
  } else {
    v[0] = bf16_low_high(r0.x, r0.y);
    v[1] = bf16_low_high(r0.z, r0.w);
    v[2] = bf16_low_high(r1.x, r1.y);
    v[3] = bf16_low_high(r1.z, r1.w);
  }
}

void main() {
  uint m0 = gl_WorkGroupID.y * GEMM_TILE_M, n0 = gl_WorkGroupID.x * GEMM_TILE_N;
  uint m = m0 + coop_load_row(), n = n0 + coop_load_row();
  bool a_in = m < args.rows, w_in = n < args.cols;
  uint a_at = (m * args.a_stride + coop_load_depth()) / 4u;
  uint w_at = n * args.depth + coop_load_depth();
  clear_coop_sums();
  vec4 a[4];
  uvec4 r0 = uvec4(0u), r1 = uvec4(0u);
  uint scale_word = 0u;
  [[unroll]] for (uint i = 0u; i < 4u; ++i) a[i] = a_in ? Vec4sIn(args.a).v[a_at + i] : vec4(0.0);
  if (w_in) load_raw_w(w_at, r0, r1, scale_word);
  for (uint k0 = 0u; k0 < args.depth; k0 += GEMM_TILE_K) {
    vec4 w[4];
    decode_raw_w(w_at + k0, r0, r1, scale_word, w);
    if (!w_in) [[unroll]] for (uint i = 0u; i < 4u; ++i) w[i] = vec4(0.0);
    store_a16(a);
    store_w16(w);
    barrier();
    if (k0 + GEMM_TILE_K < args.depth) {  // the next step's loads, in flight during the products
      uint next = k0 + GEMM_TILE_K;
      [[unroll]] for (uint i = 0u; i < 4u; ++i) a[i] = a_in ? Vec4sIn(args.a).v[a_at + next / 4u + i] : vec4(0.0);
      if (w_in) load_raw_w(w_at + next, r0, r1, scale_word);
    }
    multiply_coop_tiles();
    barrier();
  }
  store_coop_sums();
  barrier();
  bool bias = (args.flags & GEMM_BIAS) != 0u, accumulate = (args.flags & GEMM_ACCUMULATE) != 0u;
  Floats c = Floats(args.c);
  for (uint e = gl_LocalInvocationIndex; e < GEMM_TILE_M * GEMM_TILE_N; e += COOP_WORKGROUP_SIZE) {
    uint r = e / GEMM_TILE_N, col = e % GEMM_TILE_N;
    uint row = m0 + r, n_out = n0 + col;
    if (row >= args.rows || n_out >= args.cols) continue;
    float value = c_tile[r * kStrideC + col] + (bias ? FloatsIn(args.bias).v[n_out] : 0.0);
    uint at = row * args.c_stride + n_out;
    c.v[at] = accumulate ? c.v[at] + value : value;
  }
}

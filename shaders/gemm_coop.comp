#version 450
#extension GL_GOOGLE_include_directive : require
// gemm.comp on cooperative matrices (the arguments and grid are the same; the launcher picks this
// one where the device offers fp16 cooperative matrices): C[m, n] (+)= A[m] . W[n] (+ bias[n]).
#include "common.glsl"
layout(local_size_x = COOP_WORKGROUP_SIZE) in;
layout(push_constant) uniform Push { GemmArgs args; };
#include "coop_tile.glsl"

void main() {
  uint m0 = gl_WorkGroupID.y * GEMM_TILE_M, n0 = gl_WorkGroupID.x * GEMM_TILE_N;
  uint m = m0 + coop_load_row(), n = n0 + coop_load_row();
  clear_coop_sums();
  for (uint k0 = 0u; k0 < args.depth; k0 += GEMM_TILE_K) {
    vec4 v[4];
    [[unroll]] for (uint i = 0u; i < 4u; ++i) v[i] = vec4(0.0);
    if (m < args.rows) {
      uint at = (m * args.a_stride + k0 + coop_load_depth()) / 4u;
      [[unroll]] for (uint i = 0u; i < 4u; ++i) v[i] = Vec4sIn(args.a).v[at + i];
    }
    store_a16(v);
    [[unroll]] for (uint i = 0u; i < 4u; ++i) v[i] = vec4(0.0);
    if (n < args.cols) {
      uint at = n * args.depth + k0 + coop_load_depth();
      load8(args.weight, args.scales, at, v[0], v[1]);
      load8(args.weight, args.scales, at + 8u, v[2], v[3]);
    }
    store_w16(v);
    barrier();
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

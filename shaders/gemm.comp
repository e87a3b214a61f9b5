#version 450
#extension GL_GOOGLE_include_directive : require
// Prefill's dense products: C[m, n] (+)= A[m] . W[n] (+ bias[n]) for m < rows (tokens), n < cols
// (weight rows): A f32, W [cols, depth] in its stored encoding (ENCODING), decoded into shared
// memory tile by tile. Workgroup (x, y) computes rows y*GEMM_TILE_M.., cols x*GEMM_TILE_N.. The
// portable kernel: f32 throughout (lavapipe, devices without cooperative matrices).
#include "common.glsl"
layout(local_size_x = GEMM_WORKGROUP_SIZE) in;
layout(push_constant) uniform Push { GemmArgs args; };
#include "gemm_tile.glsl"

void main() {
  uint m0 = gl_WorkGroupID.y * GEMM_TILE_M, n0 = gl_WorkGroupID.x * GEMM_TILE_N;
  uint m = m0 + tile_load_row(), n = n0 + tile_load_row();
  clear_tile_sums();
  for (uint k0 = 0u; k0 < args.depth; k0 += GEMM_TILE_K) {
    vec4 lo = vec4(0.0), hi = vec4(0.0);
    if (m < args.rows) {
      uint at = (m * args.a_stride + k0 + tile_load_depth()) / 4u;
      lo = Vec4sIn(args.a).v[at];
      hi = Vec4sIn(args.a).v[at + 1u];
    }
    store_a(lo, hi);
    lo = vec4(0.0);
    hi = vec4(0.0);
    if (n < args.cols) load8(args.weight, args.scales, n * args.depth + k0 + tile_load_depth(), lo, hi);
    store_w(lo, hi);
    barrier();
    if (m0 + tile_out_row() < args.rows) multiply_tiles();  // invocations whose rows are all padding skip
    barrier();
  }
  bool bias = (args.flags & GEMM_BIAS) != 0u, accumulate = (args.flags & GEMM_ACCUMULATE) != 0u;
  Floats c = Floats(args.c);
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    uint row = m0 + tile_out_row() + i;
    if (row >= args.rows) break;
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
      uint col = n0 + tile_out_col() + j;
      if (col >= args.cols) break;
      float value = acc[i][j] + (bias ? FloatsIn(args.bias).v[col] : 0.0);
      uint at = row * args.c_stride + col;
      c.v[at] = accumulate ? c.v[at] + value : value;
    }
  }
}

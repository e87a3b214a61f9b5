#version 450
#extension GL_GOOGLE_include_directive : require
// Prefill's expert products, one tile of one expert's rows (from moe_route's tile list) per
// workgroup row y, GEMM_TILE_N weight rows per workgroup column x, MXFP4 blocks (or the values of
// experts in another encoding: load8) decoded into the shared W tile (GEMM_TILE_K = one block).
// mlp1 (EXPERT_GATHER | EXPERT_SWIGLU): A rows are the normed inputs of the rows' tokens, the gate/up row pairs become act = (clamp(up) + 1) * gate *
// sigmoid(1.702 gate); mlp2: A rows are act, out = y (bias added; the gate weight is applied by
// moe_combine). The portable kernel: f32 throughout.
#include "common.glsl"
layout(local_size_x = GEMM_WORKGROUP_SIZE) in;
layout(push_constant) uniform Push { ExpertGemmArgs args; };
#include "gemm_tile.glsl"

void main() {
  uint entry = gl_WorkGroupID.y * 3u;
  uint expert = WordsIn(args.tiles).v[entry];
  uint first_row = WordsIn(args.tiles).v[entry + 1u];
  uint rows = WordsIn(args.tiles).v[entry + 2u];
  uint n0 = gl_WorkGroupID.x * GEMM_TILE_N;
  bool gather = (args.flags & EXPERT_GATHER) != 0u;
  uint blocks_per_row = args.depth / 32u;
  uint load_row = tile_load_row();
  uint a_row = load_row < rows ? (gather ? WordsIn(args.assign_token).v[first_row + load_row] : first_row + load_row) : 0u;
  uint n = n0 + load_row;
  uint w_row = expert * args.weight_rows + n;
  clear_tile_sums();
  for (uint k0 = 0u; k0 < args.depth; k0 += GEMM_TILE_K) {
    vec4 lo = vec4(0.0), hi = vec4(0.0);
    if (load_row < rows) {
      uint at = (a_row * args.depth + k0 + tile_load_depth()) / 4u;
      lo = Vec4sIn(args.a).v[at];
      hi = Vec4sIn(args.a).v[at + 1u];
    }
    store_a(lo, hi);
    lo = vec4(0.0);
    hi = vec4(0.0);
    if (n < args.weight_rows && ENCODING == ENC_MXFP4) {
      uint block = w_row * blocks_per_row + k0 / 32u;
      uint word = WordsIn(args.blocks).v[block * 4u + tile_load_depth() / 8u];
      fp4x8(word, lo, hi);
      float scale = mxfp4_scale(args.scales, block);
      lo *= scale;
      hi *= scale;
    } else if (n < args.weight_rows) {  // experts in another encoding: one matrix [experts * rows, depth]
      load8(args.blocks, args.scales, w_row * args.depth + k0 + tile_load_depth(), lo, hi);
    }
    store_w(lo, hi);
    barrier();
    if (tile_out_row() < rows) multiply_tiles();  // invocations whose rows are all padding skip
    barrier();
  }
  Floats out_values = Floats(args.target);
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    uint row = tile_out_row() + i;
    if (row >= rows) break;
    uint out_row = first_row + row;
    uint col = n0 + tile_out_col();
    if ((args.flags & EXPERT_SWIGLU) != 0u) {
      uint intermediate = args.weight_rows / 2u;
      [[unroll]] for (uint pair = 0u; pair < 2u; ++pair) {
        uint gate_row = col + 2u * pair;
        if (gate_row >= args.weight_rows) break;
        float gate = min(acc[i][2u * pair] + FloatsIn(args.bias).v[expert * args.weight_rows + gate_row], args.limit);
        float up = clamp(acc[i][2u * pair + 1u] + FloatsIn(args.bias).v[expert * args.weight_rows + gate_row + 1u],
                         -args.limit, args.limit);
        float glu = gate / (1.0 + exp(-1.702 * gate));
        out_values.v[out_row * intermediate + gate_row / 2u] = (up + 1.0) * glu;
      }
    } else {
      [[unroll]] for (uint j = 0u; j < 4u; ++j) {
        if (col + j >= args.weight_rows) break;
        out_values.v[out_row * args.weight_rows + col + j] =
            acc[i][j] + FloatsIn(args.bias).v[expert * args.weight_rows + col + j];
      }
    }
  }
}

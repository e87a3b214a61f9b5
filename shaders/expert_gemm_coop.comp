#version 450
#extension GL_GOOGLE_include_directive : require
// expert_gemm.comp on cooperative matrices (same arguments and tile list; the indirect grid's
// columns are COOP_EXPERT_TILE_N weight rows wide): one tile of one expert's rows, MXFP4 blocks
// decoded (times their scale) into the f16 W tile. Twice the portable tile's weight rows, so each
// A tile brought to shared memory serves COOP_EXPERT_TILE_N of them and each barrier 8 subgroups'
// products (a 64 x 64 tile of 4 subgroups, two workgroups to a multiprocessor, was 27% slower in
// the engine on an H200).
#include "common.glsl"
#define COOP_TILE_M GEMM_TILE_M
#define COOP_TILE_N COOP_EXPERT_TILE_N
#define COOP_STAGES COOP_EXPERT_STAGES
#define COOP_W_PARTS COOP_EXPERT_W_PARTS
#define COOP_THREADS COOP_EXPERT_WORKGROUP_SIZE
layout(local_size_x = COOP_THREADS) in;
layout(push_constant) uniform Push { ExpertGemmArgs args; };
#include "coop_tile.glsl"

// This invocation's MXFP4 block (raw bytes q, the word holding its scale) as the W tile's halves.
void decode_w(uvec4 q, uint scale_word, uint block, bool w_in, out uvec4 hi[4], out uvec4 lo[4]) {
  vec4 w[8];
  float scale = mxfp4_scale_value((scale_word >> ((block & 3u) * 8u)) & 0xFFu);
  fp4x8(q.x, w[0], w[1]);
  fp4x8(q.y, w[2], w[3]);
  fp4x8(q.z, w[4], w[5]);
  fp4x8(q.w, w[6], w[7]);
  [[unroll]] for (uint i = 0u; i < 8u; ++i) w[i] = w_in ? w[i] * scale : vec4(0.0);
  pack_w32(w, hi, lo);
}

void main() {
  uint entry = gl_WorkGroupID.y * 3u;
  uint expert = WordsIn(args.tiles).v[entry];
  uint first_row = WordsIn(args.tiles).v[entry + 1u];
  uint rows = WordsIn(args.tiles).v[entry + 2u];
  uint n0 = gl_WorkGroupID.x * COOP_TILE_N;
  bool gather = (args.flags & EXPERT_GATHER) != 0u;
  uint blocks_per_row = args.depth / 32u;
  uint a_load_row = coop_load_a_row();
  bool a_in = a_load_row < rows;
  uint a_row = a_in ? (gather ? WordsIn(args.assign_token).v[first_row + a_load_row] : first_row + a_load_row) : 0u;
  uint n = n0 + coop_load_w_row();
  bool w_in = n < args.weight_rows;
  clear_coop_sums();
  // This invocation's block: the W row's (t % 2)-th of each pair.
  uint block = (expert * args.weight_rows + n) * blocks_per_row + coop_load_w_depth() / 32u;
  uvec4 ahi[kAQuads], alo[kAQuads];
  uvec4 w_hi[4], w_lo[4];
  uvec4 q = uvec4(0u);
  uint scale_word = 0u;
  load_a_halves(args.a_hi, args.a_lo, a_row, args.depth, 0u, ahi, alo);
  if (w_in) {
    q = QuadsIn(args.blocks).v[block];
    scale_word = WordsIn(args.scales).v[block >> 2];
  }
  decode_w(q, scale_word, block, w_in, w_hi, w_lo);
  uint stage = 0u;
  for (uint k0 = 0u; k0 < args.depth; k0 += COOP_TILE_K) {
    if (!a_in) [[unroll]] for (uint i = 0u; i < kAQuads; ++i) ahi[i] = alo[i] = uvec4(0u);
    store_a_halves(stage, ahi, alo);
    store_w_halves(stage, w_hi, w_lo);
    barrier();
    bool more = k0 + COOP_TILE_K < args.depth;
    if (more) {  // the next step's loads, in flight during the products
      block += 2u;
      load_a_halves(args.a_hi, args.a_lo, a_row, args.depth, k0 + COOP_TILE_K, ahi, alo);
      if (w_in) {
        q = QuadsIn(args.blocks).v[block];
        scale_word = WordsIn(args.scales).v[block >> 2];
      }
    }
    multiply_coop_tiles(stage, rows);
    // The next step's decoding after this step's products: its arithmetic issues while the tensor
    // cores work through them, and its loads have had the products' time to arrive.
    if (more) decode_w(q, scale_word, block, w_in, w_hi, w_lo);
    stage = coop_next_stage(stage);
  }
  barrier();  // the C tile lies over the stages the last products read
  store_coop_sums();
  barrier();
  Floats out_values = Floats(args.target);
  bool swiglu = (args.flags & EXPERT_SWIGLU) != 0u;
  uint intermediate = args.weight_rows / 2u;
  // SwiGLU pairs: (gate, up) are adjacent columns.
  uint per_row = swiglu ? COOP_TILE_N / 2u : COOP_TILE_N;
  for (uint e = gl_LocalInvocationIndex; e < COOP_TILE_M * per_row; e += COOP_THREADS) {
    uint r = e / per_row, col = e % per_row;
    if (r >= rows) continue;
    uint out_row = first_row + r;
    if (swiglu) {
      uint gate_row = n0 + 2u * col;
      if (gate_row >= args.weight_rows) continue;
      float gate = min(coop_sum(r, 2u * col) + FloatsIn(args.bias).v[expert * args.weight_rows + gate_row], args.limit);
      float up = clamp(coop_sum(r, 2u * col + 1u) + FloatsIn(args.bias).v[expert * args.weight_rows + gate_row + 1u],
                       -args.limit, args.limit);
      float glu = gate / (1.0 + exp(-1.702 * gate));
      out_values.v[out_row * intermediate + gate_row / 2u] = (up + 1.0) * glu;
    } else {
      uint n_out = n0 + col;
      if (n_out >= args.weight_rows) continue;
      out_values.v[out_row * args.weight_rows + n_out] = coop_sum(r, col) + FloatsIn(args.bias).v[expert * args.weight_rows + n_out];
    }
  }
}

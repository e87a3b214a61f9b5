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
#include "expert_coop.glsl"

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
  store_expert_rows(0u, COOP_TILE_M, expert, first_row, rows, n0);
}

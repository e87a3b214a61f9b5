// expert_gemm.comp on cooperative matrices (same arguments and tile list; the indirect grid's
// columns are COOP_EXPERT_TILE_N weight rows wide): one tile of one expert's rows, MXFP4 blocks
// decoded (times their scale) into the f16 W tile. Twice the portable tile's weight rows, so each
// A tile brought to shared memory serves COOP_EXPERT_TILE_N of them and each barrier 8 subgroups'
// products (a 64-row tile of 4 subgroups, two workgroups to a multiprocessor, was 27% slower in
// the engine on an H200). The includer (expert_gemm_coop.comp, expert_gemm_coop2.comp) defines
// COOP_STAGES and COOP_STEP_K.
#include "common.glsl"
#define COOP_TILE_M GEMM_TILE_M
#define COOP_TILE_N COOP_EXPERT_TILE_N
#define COOP_W_PARTS COOP_EXPERT_W_PARTS
#define COOP_THREADS COOP_EXPERT_WORKGROUP_SIZE
layout(local_size_x = COOP_THREADS) in;
layout(push_constant) uniform Push { ExpertGemmArgs args; };
#include "coop_tile.glsl"

// This invocation's raw weights of a step: at 64 of depth one MXFP4 block (16 bytes), at 32 half
// a block (its 16 values in two words), and the word holding the block's scale.
void load_raw_w(uint block, out uvec4 q, out uint scale_word) {
  uint half_block = (coop_load_w_depth() / 16u) % 2u;
  if (kWValues == 32u) {
    q = QuadsIn(args.blocks).v[block];
  } else {
    q = uvec4(PairsIn(args.blocks).v[2u * block + half_block], 0u, 0u);
  }
  scale_word = WordsIn(args.scales).v[block >> 2];
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
  // This invocation's block of the step at depth k0: (k0 + coop_load_w_depth()) / 32 of its W row.
  uint row_block = (expert * args.weight_rows + n) * blocks_per_row;
  uvec4 ahi[kAQuads], alo[kAQuads];
  uvec4 q = uvec4(0u);
  uint scale_word = 0u;
  load_a_halves(args.a_hi, args.a_lo, a_row, args.depth, 0u, ahi, alo);
  if (w_in) load_raw_w(row_block + coop_load_w_depth() / 32u, q, scale_word);
  uint stage = 0u;
  for (uint k0 = 0u; k0 < args.depth; k0 += COOP_STEP_K) {
    uint block = row_block + (k0 + coop_load_w_depth()) / 32u;
    vec4 w[kWValues / 4u];
    float scale = mxfp4_scale_value((scale_word >> ((block & 3u) * 8u)) & 0xFFu);
    [[unroll]] for (uint i = 0u; i < kWValues / 8u; ++i) fp4x8(q[i], w[2u * i], w[2u * i + 1u]);
    [[unroll]] for (uint i = 0u; i < kWValues / 4u; ++i) w[i] = w_in ? w[i] * scale : vec4(0.0);
    if (!a_in) [[unroll]] for (uint i = 0u; i < kAQuads; ++i) ahi[i] = alo[i] = uvec4(0u);
    store_a_halves(stage, ahi, alo);
    store_w(stage, w);
    barrier();
    uint next = k0 + COOP_STEP_K;
    if (next < args.depth) {  // the next step's loads, in flight during the products
      load_a_halves(args.a_hi, args.a_lo, a_row, args.depth, next, ahi, alo);
      if (w_in) load_raw_w(row_block + (next + coop_load_w_depth()) / 32u, q, scale_word);
    }
    multiply_coop_tiles(stage, rows, k0, args.depth);
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

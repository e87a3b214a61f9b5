#version 450
#extension GL_GOOGLE_include_directive : require
// expert_gemm_coop.comp in tiles of COOP_EXPERT_WIDE_TILE_N weight rows (VulkanTuning::expert_tile
// = 192): 12 subgroups, so 12 on a multiprocessor where the 128-wide tile's registers let 8, and
// each A tile serves 192 weight rows. A's 64 rows x 8 quads do not divide among 384 invocations by
// rows: invocation t brings quads t and t + 384 (where < 512), each of its own row. The f32 C tile
// of 64 x 192 is over the operand stages' 46 KB, so the sums go out 32 rows at a time.
#include "common.glsl"
#define COOP_TILE_M GEMM_TILE_M
#define COOP_TILE_N COOP_EXPERT_WIDE_TILE_N
#define COOP_STAGES COOP_EXPERT_STAGES
#define COOP_W_PARTS COOP_EXPERT_W_PARTS
#define COOP_THREADS COOP_EXPERT_WIDE_WORKGROUP_SIZE
#define COOP_A_STRIDED
#define COOP_C_ROWS 32
layout(local_size_x = COOP_THREADS) in;
layout(push_constant) uniform Push { ExpertGemmArgs args; };
#include "coop_tile.glsl"
#include "expert_coop.glsl"

const uint kAQuadsPerPart = COOP_TILE_M * (COOP_TILE_K / 8u);
const uint kASlots = (kAQuadsPerPart + COOP_THREADS - 1u) / COOP_THREADS;

void main() {
  uint entry = gl_WorkGroupID.y * 3u;
  uint expert = WordsIn(args.tiles).v[entry];
  uint first_row = WordsIn(args.tiles).v[entry + 1u];
  uint rows = WordsIn(args.tiles).v[entry + 2u];
  uint n0 = gl_WorkGroupID.x * COOP_TILE_N;
  bool gather = (args.flags & EXPERT_GATHER) != 0u;
  uint blocks_per_row = args.depth / 32u;
  // Slot s: quad q = t + s * COOP_THREADS of the tile's A (row q / 8, quad q % 8 of the step).
  uint a_source[kASlots];  // quad index of the row's step 0 in memory
  bool a_in[kASlots];
  [[unroll]] for (uint s = 0u; s < kASlots; ++s) {
    uint q = gl_LocalInvocationIndex + s * COOP_THREADS;
    uint r = q / 8u;
    a_in[s] = q < kAQuadsPerPart && r < rows;
    uint a_row = a_in[s] ? (gather ? WordsIn(args.assign_token).v[first_row + r] : first_row + r) : 0u;
    a_source[s] = a_row * (args.depth / 8u) + q % 8u;
  }
  uint n = n0 + coop_load_w_row();
  bool w_in = n < args.weight_rows;
  clear_coop_sums();
  uint block = (expert * args.weight_rows + n) * blocks_per_row + coop_load_w_depth() / 32u;
  uvec4 ahi[kASlots], alo[kASlots];
  uvec4 w_hi[4], w_lo[4];
  uvec4 q = uvec4(0u);
  uint scale_word = 0u;
  [[unroll]] for (uint s = 0u; s < kASlots; ++s) {
    ahi[s] = a_in[s] ? QuadsIn(args.a_hi).v[a_source[s]] : uvec4(0u);
    alo[s] = a_in[s] && SPLIT_A ? QuadsIn(args.a_lo).v[a_source[s]] : uvec4(0u);
  }
  if (w_in) {
    q = QuadsIn(args.blocks).v[block];
    scale_word = WordsIn(args.scales).v[block >> 2];
  }
  decode_w(q, scale_word, block, w_in, w_hi, w_lo);
  uint stage = 0u;
  for (uint k0 = 0u; k0 < args.depth; k0 += COOP_TILE_K) {
    [[unroll]] for (uint s = 0u; s < kASlots; ++s) {
      uint qi = gl_LocalInvocationIndex + s * COOP_THREADS;
      if (qi < kAQuadsPerPart) {
        uint at = (qi / 8u) * kRowQuads + qi % 8u;
        coop_shared[coop_a_hi_at(stage) + at] = ahi[s];
        if (SPLIT_A) coop_shared[coop_a_lo_at(stage) + at] = alo[s];
      }
    }
    store_w_halves(stage, w_hi, w_lo);
    barrier();
    bool more = k0 + COOP_TILE_K < args.depth;
    if (more) {  // the next step's loads, in flight during the products
      block += 2u;
      uint step = (k0 + COOP_TILE_K) / 8u;
      [[unroll]] for (uint s = 0u; s < kASlots; ++s) {
        ahi[s] = a_in[s] ? QuadsIn(args.a_hi).v[a_source[s] + step] : uvec4(0u);
        alo[s] = a_in[s] && SPLIT_A ? QuadsIn(args.a_lo).v[a_source[s] + step] : uvec4(0u);
      }
      if (w_in) {
        q = QuadsIn(args.blocks).v[block];
        scale_word = WordsIn(args.scales).v[block >> 2];
      }
    }
    multiply_coop_tiles(stage, rows);
    if (more) decode_w(q, scale_word, block, w_in, w_hi, w_lo);
    stage = coop_next_stage(stage);
  }
  for (uint row0 = 0u; row0 < COOP_TILE_M; row0 += COOP_C_ROWS) {
    barrier();  // the C tile lies over the stages the last products (or the last rows' epilogue) read
    store_coop_sums_rows(row0);
    barrier();
    store_expert_rows(row0, COOP_C_ROWS, expert, first_row, rows, n0);
  }
}

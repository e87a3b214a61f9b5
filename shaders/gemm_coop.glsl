// gemm.comp on cooperative matrices (the arguments and grid are the same; the launcher picks this
// one where the device offers fp16 cooperative matrices, for BF16, F16 and ggml's block types):
// C[m, n] (+)= A[m] . W[n] (+ bias[n]). Each step's global loads are issued before the previous
// step's products (raw W bytes in registers, decoded after them). Depth must be a multiple of
// COOP_TILE_K (the launcher checks; other depths take the portable kernel). The includer defines
// COOP_TILE_N, COOP_THREADS and COOP_W_PARTS: gemm_coop.comp the 64-wide tile for every encoding,
// gemm_coop_wide.comp a 128-wide one for the encodings whose values are exact in f16 (one W part),
// and for Q8_0's quants with kScaledW (coop_tile.glsl).
#include "common.glsl"
#define COOP_TILE_M GEMM_TILE_M
#define COOP_STAGES COOP_DENSE_STAGES
#define COOP_SCALED_W
layout(local_size_x = COOP_THREADS) in;
layout(push_constant) uniform Push { GemmArgs args; };
#include "coop_tile.glsl"
#if COOP_THREADS != 2 * COOP_TILE_N
#error "gemm_coop.glsl: one W block per invocation a step"
#endif

// ggml's other block types: the 32 weights as four 8-value chunks, each loaded by load_raw8 and
// decoded by decode_raw8 (ggml_blocks.glsl), their raw words held here in between.
uvec4 block_chunks[4][2];
// The 32 weights at element `index` (a multiple of 32), raw: BF16/F16 as four uvec4, Q8_0 as two
// uvec4 of quants and the word holding the block's scale, the other block types in block_chunks.
void load_raw_w(uint index, out uvec4 r[4], out uint scale_word) {
  if (ENCODING > ENC_Q8_0) {
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
      load_raw8(args.weight, args.scales, index + 8u * i, block_chunks[i][0], block_chunks[i][1]);
      r[i] = uvec4(0u);
    }
    scale_word = 0u;
  } else if (ENCODING == ENC_Q8_0) {
    r[0] = QuadsIn(args.weight).v[index >> 4];
    r[1] = QuadsIn(args.weight).v[(index >> 4) + 1u];
    r[2] = uvec4(0u);
    r[3] = uvec4(0u);
    scale_word = WordsIn(args.scales).v[index >> 6];
  } else {
    [[unroll]] for (uint i = 0u; i < 4u; ++i) r[i] = QuadsIn(args.weight).v[(index >> 3) + i];
    scale_word = 0u;
  }
}
// Q8_0 with kScaledW: the quants themselves (exact in f16), d apart (w_scale).
void decode_raw_w(uint index, uvec4 r[4], uint scale_word, out vec4 v[8], out float w_scale) {
  w_scale = 1.0;
  if (ENCODING > ENC_Q8_0) {
    // Only where main loaded them (a W row of the matrix): unset words decode to nothing defined.
    bool loaded = gl_WorkGroupID.y * COOP_TILE_N + coop_load_w_row() < args.cols;
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
      v[2u * i] = vec4(0.0);
      v[2u * i + 1u] = vec4(0.0);
      if (loaded)
        decode_raw8(args.weight, block_chunks[i][0], block_chunks[i][1], index + 8u * i, v[2u * i], v[2u * i + 1u]);
    }
  } else if (ENCODING == ENC_Q8_0) {
    float d = q8_0_scale(scale_word, index);
    if (kScaledW) {
      w_scale = d;
      d = 1.0;
    }
    [[unroll]] for (uint i = 0u; i < 2u; ++i) {
      v[4u * i] = d * int8x4(r[i].x);
      v[4u * i + 1u] = d * int8x4(r[i].y);
      v[4u * i + 2u] = d * int8x4(r[i].z);
      v[4u * i + 3u] = d * int8x4(r[i].w);
    }
  } else if (ENCODING == ENC_F16) {
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
      v[2u * i] = f16_low_high(r[i].x, r[i].y);
      v[2u * i + 1u] = f16_low_high(r[i].z, r[i].w);
    }
  } else {
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
      v[2u * i] = bf16_low_high(r[i].x, r[i].y);
      v[2u * i + 1u] = bf16_low_high(r[i].z, r[i].w);
    }
  }
}

// The 32 weights at element `index` as the W tile's halves (zero past the matrix's rows), and with
// kScaledW the block's d.
void decode_w(uint index, uvec4 r[4], uint scale_word, bool w_in, out uvec4 hi[4], out uvec4 lo[4], out float w_scale) {
  vec4 w[8];
  decode_raw_w(index, r, scale_word, w, w_scale);
  if (!w_in) [[unroll]] for (uint i = 0u; i < 8u; ++i) w[i] = vec4(0.0);
  pack_w32(w, hi, lo);
}

void main() {
  // Row tiles along x, the dispatch's fastest index: the workgroups of one W tile run together, so
  // a W larger than the L2 (the unembedding's) is read from memory about once, not once per row tile.
  uint m0 = gl_WorkGroupID.x * GEMM_TILE_M, n0 = gl_WorkGroupID.y * COOP_TILE_N;
  uint m = m0 + coop_load_a_row(), n = n0 + coop_load_w_row();
  bool a_in = m < args.rows, w_in = n < args.cols;
  uint w_at = n * args.depth + coop_load_w_depth();
  uint a_row = a_in ? m : 0u;
  clear_coop_sums();
  uvec4 ahi[kAQuads], alo[kAQuads];
  uvec4 r[4], w_hi[4], w_lo[4];
  uint scale_word = 0u;
  float w_scale = 1.0;
  load_a_halves(args.a_hi, args.a_lo, a_row, args.depth, 0u, ahi, alo);
  [[unroll]] for (uint i = 0u; i < 4u; ++i) r[i] = uvec4(0u);
  if (w_in) load_raw_w(w_at, r, scale_word);
  decode_w(w_at, r, scale_word, w_in, w_hi, w_lo, w_scale);
  uint stage = 0u;
  for (uint k0 = 0u; k0 < args.depth; k0 += COOP_TILE_K) {
    if (!a_in) [[unroll]] for (uint i = 0u; i < kAQuads; ++i) ahi[i] = alo[i] = uvec4(0u);
    store_a_halves(stage, ahi, alo);
    store_w_halves(stage, w_hi, w_lo);
    if (kScaledW) store_w_scale(stage, w_scale);
    barrier();
    uint next = k0 + COOP_TILE_K;
    if (next < args.depth) {  // the next step's loads, in flight during the products
      load_a_halves(args.a_hi, args.a_lo, a_row, args.depth, next, ahi, alo);
      if (w_in) load_raw_w(w_at + next, r, scale_word);
    }
    multiply_coop_tiles(stage, args.rows - m0);
    // The next step's decoding after this step's products (expert_gemm_coop.comp says why).
    if (next < args.depth) decode_w(w_at + next, r, scale_word, w_in, w_hi, w_lo, w_scale);
    stage = coop_next_stage(stage);
  }
  barrier();  // the C tile lies over the stages the last products read
  store_coop_sums();
  barrier();
  bool bias = (args.flags & GEMM_BIAS) != 0u, accumulate = (args.flags & GEMM_ACCUMULATE) != 0u;
  Floats c = Floats(args.c);
  for (uint e = gl_LocalInvocationIndex; e < COOP_TILE_M * COOP_TILE_N; e += COOP_THREADS) {
    uint r0 = e / COOP_TILE_N, col = e % COOP_TILE_N;
    uint row = m0 + r0, n_out = n0 + col;
    if (row >= args.rows || n_out >= args.cols) continue;
    float value = coop_sum(r0, col) + (bias ? FloatsIn(args.bias).v[n_out] : 0.0);
    uint at = row * args.c_stride + n_out;
    c.v[at] = accumulate ? c.v[at] + value : value;
  }
}

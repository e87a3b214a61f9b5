// The cooperative expert GEMM's body (expert_gemm_coop.comp, expert_gemm_coop_half.comp): the
// includer defines the tile (COOP_TILE_M x COOP_TILE_N, COOP_THREADS) and includes coop_tile.glsl;
// one tile of one expert's rows, MXFP4 blocks decoded (times their scale) into the f16 W tile,
// kWBlocks blocks per invocation and step.

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
  // With EXPERT_HALF_TILES the tiles of at most COOP_EXPERT_HALF_TILE_M rows are the half form's
  // (expert_gemm_coop_half), the rest this form's; each exits on the other's tiles and on the
  // grid's columns past its weight rows.
  bool half_tile = (args.flags & EXPERT_HALF_TILES) != 0u && rows <= COOP_EXPERT_HALF_TILE_M;
  if (half_tile != (COOP_TILE_M == COOP_EXPERT_HALF_TILE_M)) return;
  uint n0 = gl_WorkGroupID.x * COOP_TILE_N;
  if (n0 >= args.weight_rows) return;
  bool gather = (args.flags & EXPERT_GATHER) != 0u;
  uint blocks_per_row = args.depth / 32u;
  uint a_load_row = coop_load_a_row();
  bool a_in = a_load_row < rows;
  uint a_row = a_in ? (gather ? WordsIn(args.assign_token).v[first_row + a_load_row] : first_row + a_load_row) : 0u;
  clear_coop_sums();
  // This invocation's blocks: of W rows coop_load_w_row_of(j), the (t % 2)-th of each pair.
  bool w_in[kWBlocks];
  uint block[kWBlocks];
  uvec4 q[kWBlocks];
  uint scale_word[kWBlocks];
  uvec4 w_hi[kWBlocks][4], w_lo[kWBlocks][4];
  uvec4 ahi[kAQuads], alo[kAQuads];
  load_a_halves(args.a_hi, args.a_lo, a_row, args.depth, 0u, ahi, alo);
  [[unroll]] for (uint j = 0u; j < kWBlocks; ++j) {
    uint n = n0 + coop_load_w_row_of(j);
    w_in[j] = n < args.weight_rows;
    block[j] = (expert * args.weight_rows + n) * blocks_per_row + coop_load_w_depth() / 32u;
    q[j] = uvec4(0u);
    scale_word[j] = 0u;
    if (w_in[j]) {
      q[j] = QuadsIn(args.blocks).v[block[j]];
      scale_word[j] = WordsIn(args.scales).v[block[j] >> 2];
    }
  }
  [[unroll]] for (uint j = 0u; j < kWBlocks; ++j) decode_w(q[j], scale_word[j], block[j], w_in[j], w_hi[j], w_lo[j]);
  uint stage = 0u;
  for (uint k0 = 0u; k0 < args.depth; k0 += COOP_TILE_K) {
    if (!a_in) [[unroll]] for (uint i = 0u; i < kAQuads; ++i) ahi[i] = alo[i] = uvec4(0u);
    store_a_halves(stage, ahi, alo);
    [[unroll]] for (uint j = 0u; j < kWBlocks; ++j) store_w_halves_of(stage, j, w_hi[j], w_lo[j]);
    barrier();
    bool more = k0 + COOP_TILE_K < args.depth;
    if (more) {  // the next step's loads, in flight during the products
      load_a_halves(args.a_hi, args.a_lo, a_row, args.depth, k0 + COOP_TILE_K, ahi, alo);
      [[unroll]] for (uint j = 0u; j < kWBlocks; ++j) {
        block[j] += 2u;
        if (w_in[j]) {
          q[j] = QuadsIn(args.blocks).v[block[j]];
          scale_word[j] = WordsIn(args.scales).v[block[j] >> 2];
        }
      }
    }
    multiply_coop_tiles(stage, rows);
    // The next step's decoding after this step's products: its arithmetic issues while the tensor
    // cores work through them, and its loads have had the products' time to arrive.
    if (more)
      [[unroll]] for (uint j = 0u; j < kWBlocks; ++j) decode_w(q[j], scale_word[j], block[j], w_in[j], w_hi[j], w_lo[j]);
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

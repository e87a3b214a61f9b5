// The cooperative expert GEMM (included after coop_tile.glsl): expert_gemm_coop.comp, its
// 192-wide form expert_gemm_coop_wide.comp and its 32-row form expert_gemm_coop_short.comp are this
// kernel at three tile shapes. One tile of one
// expert's rows (the tile list's entry gl_WorkGroupID.y, gathered through assign_token for mlp1),
// COOP_TILE_N weight rows from gl_WorkGroupID.x; MXFP4 blocks decoded (times their scale) into the
// f16 W tile; the epilogue adds the bias and, for mlp1, takes SwiGLU of the (gate, up) pairs,
// adjacent columns.

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

// C rows row0 .. row0 + c_rows of the tile (the C tile's rows 0 .. c_rows: store_coop_sums_rows(row0))
// into the target rows, bias added; mlp1's SwiGLU of each (gate, up) pair.
void store_expert_rows(uint row0, uint c_rows, uint expert, uint first_row, uint rows, uint n0) {
  Floats out_values = Floats(args.target);
  bool swiglu = (args.flags & EXPERT_SWIGLU) != 0u;
  uint intermediate = args.weight_rows / 2u;
  // SwiGLU pairs: (gate, up) are adjacent columns.
  uint per_row = swiglu ? COOP_TILE_N / 2u : COOP_TILE_N;
  for (uint e = gl_LocalInvocationIndex; e < c_rows * per_row; e += COOP_THREADS) {
    uint r = e / per_row, col = e % per_row;
    if (row0 + r >= rows) continue;
    uint out_row = first_row + row0 + r;
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

// A's rows: where each of this invocation's rows of A lies (source) and whether the tile has it
// (a_in; zeros where not), then its halves of a step (expert_load_a) and their stores. With
// COOP_A_STRIDED in coop_tile.glsl's slots (a row's quads eight invocations to a row, any
// workgroup size: the 192-wide tile's 384 invocations); else each invocation's whole quads of one
// row (load_a_halves), which the 128-wide tile keeps: its tiles of few rows (synth:120b's 16 rows
// an expert at pp512) prefilled slower in slots (df5484b's message has the measurement).
#ifdef COOP_A_STRIDED
const uint kASources = kASlots, kAHeld = kASlots;
void expert_a_rows(uint first_row, uint rows, bool gather, out uint source[kASources], out bool a_in[kASources]) {
  [[unroll]] for (uint s = 0u; s < kASources; ++s) {
    uint r = coop_a_slot_row(s);
    a_in[s] = coop_a_slot_quad(s) < kAQuadsPerPart && r < rows;
    uint a_row = a_in[s] ? (gather ? WordsIn(args.assign_token).v[first_row + r] : first_row + r) : 0u;
    source[s] = coop_a_slot_source(s, a_row, args.depth);
  }
}
void expert_load_a(uint source[kASources], bool a_in[kASources], uint k0, out uvec4 hi[kAHeld], out uvec4 lo[kAHeld]) {
  load_a_slots(args.a_hi, args.a_lo, source, a_in, k0, hi, lo);
}
void expert_store_a(uint stage, bool a_in[kASources], uvec4 hi[kAHeld], uvec4 lo[kAHeld]) { store_a_slots(stage, hi, lo); }
#else
const uint kASources = 1u, kAHeld = kAQuads;
void expert_a_rows(uint first_row, uint rows, bool gather, out uint source[kASources], out bool a_in[kASources]) {
  uint r = coop_load_a_row();
  a_in[0] = r < rows;
  source[0] = a_in[0] ? (gather ? WordsIn(args.assign_token).v[first_row + r] : first_row + r) : 0u;
}
void expert_load_a(uint source[kASources], bool a_in[kASources], uint k0, out uvec4 hi[kAHeld], out uvec4 lo[kAHeld]) {
  load_a_halves(args.a_hi, args.a_lo, source[0], args.depth, k0, hi, lo);
}
void expert_store_a(uint stage, bool a_in[kASources], uvec4 hi[kAHeld], uvec4 lo[kAHeld]) {
  if (!a_in[0]) [[unroll]] for (uint i = 0u; i < kAHeld; ++i) hi[i] = lo[i] = uvec4(0u);
  store_a_halves(stage, hi, lo);
}
#endif

// This workgroup's tile: the tile list's entry gl_WorkGroupID.y (its expert, first row and rows),
// its first weight row n0 (gl_WorkGroupID.x), and where this invocation's A rows lie.
void expert_tile(out uint expert, out uint first_row, out uint rows, out uint n0, out uint a_source[kASources],
                 out bool a_in[kASources]) {
  uint entry = gl_WorkGroupID.y * 3u;
  expert = WordsIn(args.tiles).v[entry];
  first_row = WordsIn(args.tiles).v[entry + 1u];
  rows = WordsIn(args.tiles).v[entry + 2u];
  n0 = gl_WorkGroupID.x * COOP_TILE_N;
  expert_a_rows(first_row, rows, (args.flags & EXPERT_GATHER) != 0u, a_source, a_in);
}

// After the last step's products: the sums through the C tile into the target rows, COOP_C_ROWS
// at a time (store_expert_rows).
void store_expert_tile(uint expert, uint first_row, uint rows, uint n0) {
  for (uint row0 = 0u; row0 < COOP_TILE_M; row0 += COOP_C_ROWS) {
    barrier();  // the C tile lies over the stages the last products (or the last rows' epilogue) read
    store_coop_sums_rows(row0);
    barrier();
    store_expert_rows(row0, COOP_C_ROWS, expert, first_row, rows, n0);
  }
}

// The kernel: a tile's steps, COOP_TILE_K deep, each storing A (and, with W through shared memory,
// the W tile) to its stage, one barrier, the next step's loads issued, this step's products, and the
// next step's W decoded after them, so that its arithmetic issues while the tensor cores work
// through the products and its loads have had their time to arrive. With COOP_DIRECT_W each lane
// loads the W elements its B operands hold and decodes them straight into the operands
// (expert_direct.glsl, included before this file); otherwise each invocation decodes its
// kWBlocks MXFP4 blocks (coop_tile.glsl) into the W tile's halves.
void expert_gemm_coop() {
  uint expert, first_row, rows, n0;
  uint a_source[kASources];
  bool a_in[kASources];
  expert_tile(expert, first_row, rows, n0, a_source, a_in);
  uint blocks_per_row = args.depth / 32u;
  clear_coop_sums();
#ifdef COOP_DIRECT_W
  // This lane's W rows (kDirectRows): subgroup column block j's rows lane / 4 + 8 slot.
  bool w_in[kDirectRows];
  uint block[kDirectRows];
  [[unroll]] for (uint r = 0u; r < kDirectRows; ++r) {
    uint n = n0 + coop_sub_n() + 16u * (r / 2u) + 8u * (r % 2u) + gl_SubgroupInvocationID / 4u;
    w_in[r] = n < args.weight_rows;
    block[r] = (expert * args.weight_rows + n) * blocks_per_row;
  }
  uvec4 ahi[kAHeld], alo[kAHeld];
  uvec4 q[kDirectRows][2];
  uint scale_word[kDirectRows];
  expert_load_a(a_source, a_in, 0u, ahi, alo);
  // A step's two blocks share a scale word: blocks_per_row is even (depth % COOP_TILE_K == 0).
  [[unroll]] for (uint r = 0u; r < kDirectRows; ++r) {
    q[r][0] = w_in[r] ? QuadsIn(args.blocks).v[block[r]] : uvec4(0u);
    q[r][1] = w_in[r] ? QuadsIn(args.blocks).v[block[r] + 1u] : uvec4(0u);
    scale_word[r] = w_in[r] ? WordsIn(args.scales).v[block[r] >> 2] : 0u;
  }
  decode_w_direct(q, scale_word, block, w_in);
#else
  // This invocation's blocks (kWBlocks of them, coop_tile.glsl): each the W row's (t % 2)-th of
  // each pair.
  bool w_in[kWBlocks];
  uint block[kWBlocks];
  [[unroll]] for (uint b = 0u; b < kWBlocks; ++b) {
    uint n = n0 + coop_load_w_row(b);
    w_in[b] = n < args.weight_rows;
    block[b] = (expert * args.weight_rows + n) * blocks_per_row + coop_load_w_depth() / 32u;
  }
  uvec4 ahi[kAHeld], alo[kAHeld];
  uvec4 w_hi[kWBlocks * 4u], w_lo[kWBlocks * 4u];
  uvec4 q[kWBlocks];
  uint scale_word[kWBlocks];
  expert_load_a(a_source, a_in, 0u, ahi, alo);
  [[unroll]] for (uint b = 0u; b < kWBlocks; ++b) {
    q[b] = w_in[b] ? QuadsIn(args.blocks).v[block[b]] : uvec4(0u);
    scale_word[b] = w_in[b] ? WordsIn(args.scales).v[block[b] >> 2] : 0u;
    uvec4 hi[4], lo[4];
    decode_w(q[b], scale_word[b], block[b], w_in[b], hi, lo);
    [[unroll]] for (uint i = 0u; i < 4u; ++i) w_hi[4u * b + i] = hi[i], w_lo[4u * b + i] = lo[i];
  }
#endif
  uint stage = 0u;
  for (uint k0 = 0u; k0 < args.depth; k0 += COOP_TILE_K) {
    expert_store_a(stage, a_in, ahi, alo);
#ifndef COOP_DIRECT_W
    [[unroll]] for (uint b = 0u; b < kWBlocks; ++b) {
      uvec4 hi[4], lo[4];
      [[unroll]] for (uint i = 0u; i < 4u; ++i) hi[i] = w_hi[4u * b + i], lo[i] = w_lo[4u * b + i];
      store_w_halves(stage, b, hi, lo);
    }
#endif
    barrier();
    bool more = k0 + COOP_TILE_K < args.depth;
    if (more) {  // the next step's loads, in flight during the products
      expert_load_a(a_source, a_in, k0 + COOP_TILE_K, ahi, alo);
#ifdef COOP_DIRECT_W
      [[unroll]] for (uint r = 0u; r < kDirectRows; ++r) {
        block[r] += 2u;
        if (w_in[r]) {
          q[r][0] = QuadsIn(args.blocks).v[block[r]];
          q[r][1] = QuadsIn(args.blocks).v[block[r] + 1u];
          scale_word[r] = WordsIn(args.scales).v[block[r] >> 2];
        }
      }
#else
      [[unroll]] for (uint b = 0u; b < kWBlocks; ++b) {
        block[b] += 2u;
        if (w_in[b]) {
          q[b] = QuadsIn(args.blocks).v[block[b]];
          scale_word[b] = WordsIn(args.scales).v[block[b] >> 2];
        }
      }
#endif
    }
    multiply_coop_tiles(stage, rows);
#ifdef COOP_DIRECT_W
    if (more) decode_w_direct(q, scale_word, block, w_in);
#else
    if (more)
      [[unroll]] for (uint b = 0u; b < kWBlocks; ++b) {
        uvec4 hi[4], lo[4];
        decode_w(q[b], scale_word[b], block[b], w_in[b], hi, lo);
        [[unroll]] for (uint i = 0u; i < 4u; ++i) w_hi[4u * b + i] = hi[i], w_lo[4u * b + i] = lo[i];
      }
#endif
    stage = coop_next_stage(stage);
  }
  store_expert_tile(expert, first_row, rows, n0);
}

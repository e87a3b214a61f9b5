// What the cooperative expert GEMMs share (expert_gemm_coop.comp and its 192-wide form
// expert_gemm_coop_wide.comp; after coop_tile.glsl): decoding an MXFP4 block into the W tile's
// halves and the epilogue of the C tile's rows (bias; mlp1's SwiGLU pairs, adjacent columns).

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

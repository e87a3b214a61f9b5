// The portable GEMM tile shared by gemm.comp and expert_gemm.comp: a GEMM_TILE_M x GEMM_TILE_N
// block of C = A W^T built GEMM_TILE_K deep at a time from f32 tiles in shared memory (W decoded
// from its encoding as it is stored into its tile), GEMM_WORKGROUP_SIZE invocations each owning
// 4 x 4 outputs. Loads: invocation t stores 8 values of A row t/4 and of W row t/4, depth
// (t%4)*8 .. +8. Every output sums its products in increasing depth, whatever tile it falls in.
shared float a_tile[GEMM_TILE_K][GEMM_TILE_M + 1];
shared float w_tile[GEMM_TILE_K][GEMM_TILE_N + 1];
float acc[4][4];

uint tile_load_row() { return gl_LocalInvocationIndex / 4u; }
uint tile_load_depth() { return (gl_LocalInvocationIndex % 4u) * 8u; }
uint tile_out_row() { return (gl_LocalInvocationIndex / 16u) * 4u; }
uint tile_out_col() { return (gl_LocalInvocationIndex % 16u) * 4u; }

void clear_tile_sums() {
  [[unroll]] for (uint i = 0u; i < 4u; ++i) [[unroll]] for (uint j = 0u; j < 4u; ++j) acc[i][j] = 0.0;
}
void store_a(vec4 lo, vec4 hi) {
  uint row = tile_load_row(), depth = tile_load_depth();
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    a_tile[depth + i][row] = lo[i];
    a_tile[depth + 4u + i][row] = hi[i];
  }
}
void store_w(vec4 lo, vec4 hi) {
  uint row = tile_load_row(), depth = tile_load_depth();
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    w_tile[depth + i][row] = lo[i];
    w_tile[depth + 4u + i][row] = hi[i];
  }
}
// Each step's GEMM_TILE_K products are summed apart and then added to the running sums: two-level
// summation, so the rounding error grows with depth / GEMM_TILE_K + GEMM_TILE_K terms instead of
// the depth (2880-deep rows at |x| ~ 1e3 otherwise drift 8x beyond the CPU engine's error).
// It holds no barrier: an invocation whose 4 output rows all lie beyond the tile's rows (a prompt
// of 11 tokens fills 11 of 64) skips it, so the padding costs loads but no products (on lavapipe,
// whose invocations are SIMD lanes, a 5x smaller logits GEMM for 11 rows).
void multiply_tiles() {
  uint m = tile_out_row(), n = tile_out_col();
  float part[4][4];
  [[unroll]] for (uint i = 0u; i < 4u; ++i) [[unroll]] for (uint j = 0u; j < 4u; ++j) part[i][j] = 0.0;
  for (uint k = 0u; k < GEMM_TILE_K; ++k) {
    vec4 a = vec4(a_tile[k][m], a_tile[k][m + 1u], a_tile[k][m + 2u], a_tile[k][m + 3u]);
    vec4 w = vec4(w_tile[k][n], w_tile[k][n + 1u], w_tile[k][n + 2u], w_tile[k][n + 3u]);
    [[unroll]] for (uint i = 0u; i < 4u; ++i) [[unroll]] for (uint j = 0u; j < 4u; ++j) part[i][j] = fma(a[i], w[j], part[i][j]);
  }
  [[unroll]] for (uint i = 0u; i < 4u; ++i) [[unroll]] for (uint j = 0u; j < 4u; ++j) acc[i][j] += part[i][j];
}

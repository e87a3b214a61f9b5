// The cooperative-matrix GEMM tile shared by gemm_coop.comp and expert_gemm_coop.comp
// (VK_NV_cooperative_matrix; written so the KHR form is a rename of types and calls): a
// GEMM_TILE_M x GEMM_TILE_N block of C = A W^T, COOP_TILE_K deep per step, from f16 tiles in
// shared memory (A rounded to f16, or with SPLIT_A as f16 hi + f16 lo parts, two products, for
// about f32 accuracy; W decoded from its encoding to f16, exact for BF16/F16/MXFP4 values in f16
// range, Q8_0's d * q rounded to f16), f32 accumulators. COOP_WORKGROUP_SIZE invocations = 4
// subgroups of 32, each owning a 32 x 32 quadrant as (32/M) x (32/N) matrices of the device's
// M x N x K shape.
//
// Loads: invocation t brings 32 values (one Q8_0/MXFP4 block) of A row t/2 and of W row t/2
// (depth (t%2)*32 .. +32) per step. The kernels issue the next step's global loads into registers before this step's
// products (raw bytes; decoded and stored after the products), so memory latency hides behind
// the matrix units, and store 8 halves at a time. The result goes through a shared f32 tile so
// the epilogue (bias, accumulate, SwiGLU, scattered rows) is plain code.
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require

layout(constant_id = SPEC_COOP_SPLIT) const bool SPLIT_A = false;
layout(constant_id = SPEC_COOP_M) const uint lM = 16u;
layout(constant_id = SPEC_COOP_N) const uint lN = 16u;
layout(constant_id = SPEC_COOP_K) const uint lK = 16u;

const uint kRowQuads = COOP_TILE_K / 8u + 1u;  // uvec4s (8 halves) per shared row: 144 bytes, skewed banks
const uint kStrideC = GEMM_TILE_N + 4u;        // floats per shared C row
shared uvec4 a_hi[GEMM_TILE_M * kRowQuads];
shared uvec4 a_lo[GEMM_TILE_M * kRowQuads];
shared uvec4 w_half[GEMM_TILE_N * kRowQuads];
shared float c_tile[GEMM_TILE_M * kStrideC];

const uint kRowsPerSubgroup = 32u / lM, kColsPerSubgroup = 32u / lN;
fcoopmatNV<32, gl_ScopeSubgroup, lM, lN> acc[kRowsPerSubgroup][kColsPerSubgroup];

uint coop_load_row() { return gl_LocalInvocationIndex / 2u; }
uint coop_load_depth() { return (gl_LocalInvocationIndex % 2u) * 32u; }

void clear_coop_sums() {
  [[unroll]] for (uint i = 0u; i < kRowsPerSubgroup; ++i)
    [[unroll]] for (uint j = 0u; j < kColsPerSubgroup; ++j) acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, lM, lN>(0.0);
}
uvec4 halves8(vec4 lo, vec4 hi) {
  return uvec4(packHalf2x16(lo.xy), packHalf2x16(lo.zw), packHalf2x16(hi.xy), packHalf2x16(hi.zw));
}
// 32 halves of this invocation's A row (split_halves made them) into the tile(s).
void store_a_halves(uvec4 hi[4], uvec4 lo[4]) {
  uint at = coop_load_row() * kRowQuads + coop_load_depth() / 8u;
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    a_hi[at + i] = hi[i];
    if (SPLIT_A) a_lo[at + i] = lo[i];
  }
}
// This invocation's 32 halves of A row `row` (hi, and lo with SPLIT_A) at depth k0.
void load_a_halves(uvec2 a_hi_address, uvec2 a_lo_address, uint row, uint depth, uint k0, out uvec4 hi[4], out uvec4 lo[4]) {
  uint at = (row * depth + k0 + coop_load_depth()) / 8u;
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    hi[i] = QuadsIn(a_hi_address).v[at + i];
    lo[i] = SPLIT_A ? QuadsIn(a_lo_address).v[at + i] : uvec4(0u);
  }
}
void store_w32(vec4 v[8]) {
  uint at = coop_load_row() * kRowQuads + coop_load_depth() / 8u;
  [[unroll]] for (uint i = 0u; i < 4u; ++i) w_half[at + i] = halves8(v[2u * i], v[2u * i + 1u]);
}
void multiply_coop_tiles() {
  uint sub_m = (gl_SubgroupID / 2u) * 32u, sub_n = (gl_SubgroupID % 2u) * 32u;
  [[unroll]] for (uint k = 0u; k < COOP_TILE_K; k += lK) {
    fcoopmatNV<16, gl_ScopeSubgroup, lM, lK> a[kRowsPerSubgroup];
    fcoopmatNV<16, gl_ScopeSubgroup, lM, lK> a2[kRowsPerSubgroup];
    [[unroll]] for (uint i = 0u; i < kRowsPerSubgroup; ++i) {
      coopMatLoadNV(a[i], a_hi, (sub_m + i * lM) * kRowQuads + k / 8u, kRowQuads, false);
      if (SPLIT_A) coopMatLoadNV(a2[i], a_lo, (sub_m + i * lM) * kRowQuads + k / 8u, kRowQuads, false);
    }
    [[unroll]] for (uint j = 0u; j < kColsPerSubgroup; ++j) {
      fcoopmatNV<16, gl_ScopeSubgroup, lK, lN> b;
      // W rows are B's columns: column-major B from the row-major W tile.
      coopMatLoadNV(b, w_half, (sub_n + j * lN) * kRowQuads + k / 8u, kRowQuads, true);
      [[unroll]] for (uint i = 0u; i < kRowsPerSubgroup; ++i) {
        acc[i][j] = coopMatMulAddNV(a[i], b, acc[i][j]);
        if (SPLIT_A) acc[i][j] = coopMatMulAddNV(a2[i], b, acc[i][j]);
      }
    }
  }
}
// The sums into c_tile[row][col]; call with every invocation, then barrier() before reading.
void store_coop_sums() {
  uint sub_m = (gl_SubgroupID / 2u) * 32u, sub_n = (gl_SubgroupID % 2u) * 32u;
  [[unroll]] for (uint i = 0u; i < kRowsPerSubgroup; ++i)
    [[unroll]] for (uint j = 0u; j < kColsPerSubgroup; ++j)
      coopMatStoreNV(acc[i][j], c_tile, (sub_m + i * lM) * kStrideC + sub_n + j * lN, kStrideC, false);
}

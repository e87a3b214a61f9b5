// The cooperative-matrix GEMM tile shared by gemm_coop.comp and expert_gemm_coop.comp
// (VK_NV_cooperative_matrix; written so the KHR form is a rename of types and calls): a
// GEMM_TILE_M x GEMM_TILE_N block of C = A W^T, GEMM_TILE_K deep per step, from f16 tiles in
// shared memory (A rounded to f16, or with SPLIT_A as f16 hi + f16 lo parts, two products, for
// about f32 accuracy; W decoded from its encoding to f16, exact for BF16/F16/MXFP4 values in f16
// range, Q8_0's d * q rounded to f16), f32 accumulators. COOP_WORKGROUP_SIZE invocations = 4
// subgroups of 32, each owning a 32 x 32 quadrant as (32/M) x (32/N) matrices of the device's
// M x N x K shape.
//
// Loads: invocation t brings 16 values of A row t/2 and of W row t/2 (depth (t%2)*16 .. +16) per
// step. The kernels issue the next step's global loads into registers before this step's
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

const uint kRowQuads = GEMM_TILE_K / 8u + 1u;  // uvec4s (8 halves) per shared row: 80 bytes, skewed banks
const uint kStrideC = GEMM_TILE_N + 4u;        // floats per shared C row
shared uvec4 a_hi[GEMM_TILE_M * kRowQuads];
shared uvec4 a_lo[GEMM_TILE_M * kRowQuads];
shared uvec4 w_half[GEMM_TILE_N * kRowQuads];
shared float c_tile[GEMM_TILE_M * kStrideC];

const uint kRowsPerSubgroup = 32u / lM, kColsPerSubgroup = 32u / lN;
fcoopmatNV<32, gl_ScopeSubgroup, lM, lN> acc[kRowsPerSubgroup][kColsPerSubgroup];

uint coop_load_row() { return gl_LocalInvocationIndex / 2u; }
uint coop_load_depth() { return (gl_LocalInvocationIndex % 2u) * 16u; }

void clear_coop_sums() {
  [[unroll]] for (uint i = 0u; i < kRowsPerSubgroup; ++i)
    [[unroll]] for (uint j = 0u; j < kColsPerSubgroup; ++j) acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, lM, lN>(0.0);
}
uvec4 halves8(vec4 lo, vec4 hi) {
  return uvec4(packHalf2x16(lo.xy), packHalf2x16(lo.zw), packHalf2x16(hi.xy), packHalf2x16(hi.zw));
}
// 16 values of this invocation's A row (f32) into the f16 tile(s).
void store_a16(vec4 v[4]) {
  uint at = coop_load_row() * kRowQuads + coop_load_depth() / 8u;
  if (SPLIT_A) {
    // hi: the value with its mantissa cut to f16's 10 bits (a mask, exact in f16 in its range; a
    // conversion round trip would be folded away by the compiler); lo: the rest, exact in f32 and
    // rounded to f16: hi + lo holds about 21 significant bits of each value.
    vec4 hi[4], lo[4];
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
      hi[i] = uintBitsToFloat(floatBitsToUint(v[i]) & uvec4(0xFFFFE000u));
      lo[i] = v[i] - hi[i];
    }
    a_hi[at] = halves8(hi[0], hi[1]);
    a_hi[at + 1u] = halves8(hi[2], hi[3]);
    a_lo[at] = halves8(lo[0], lo[1]);
    a_lo[at + 1u] = halves8(lo[2], lo[3]);
  } else {
    a_hi[at] = halves8(v[0], v[1]);
    a_hi[at + 1u] = halves8(v[2], v[3]);
  }
}
void store_w16(vec4 v[4]) {
  uint at = coop_load_row() * kRowQuads + coop_load_depth() / 8u;
  w_half[at] = halves8(v[0], v[1]);
  w_half[at + 1u] = halves8(v[2], v[3]);
}
void multiply_coop_tiles() {
  uint sub_m = (gl_SubgroupID / 2u) * 32u, sub_n = (gl_SubgroupID % 2u) * 32u;
  [[unroll]] for (uint k = 0u; k < GEMM_TILE_K; k += lK) {
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

// The cooperative-matrix GEMM tile shared by gemm_coop.comp and expert_gemm_coop.comp
// (VK_NV_cooperative_matrix; written so the KHR form is a rename of types and calls): a
// GEMM_TILE_M x GEMM_TILE_N block of C = A W^T, GEMM_TILE_K deep per step, from f16 tiles in
// shared memory (A rounded to f16, or with SPLIT_A as f16 hi + f16 lo parts, two products, for
// about f32 accuracy; W decoded from its encoding to f16, exact for BF16/F16/Q8_0/MXFP4 values in
// f16 range), f32 accumulators. COOP_WORKGROUP_SIZE invocations = 4 subgroups of 32, each owning a
// 32 x 32 quadrant as (32/M) x (32/N) matrices of the device's M x N x K shape. Loads: invocation
// t converts 16 values of A row t/2 and W row t/2, depth (t%2)*16 .. +16. The result goes through
// a shared f32 tile so the epilogue (bias, accumulate, SwiGLU, scattered rows) is plain code.
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require

layout(constant_id = SPEC_COOP_SPLIT) const bool SPLIT_A = false;
layout(constant_id = SPEC_COOP_M) const uint lM = 16u;
layout(constant_id = SPEC_COOP_N) const uint lN = 16u;
layout(constant_id = SPEC_COOP_K) const uint lK = 16u;

const uint kStrideH = GEMM_TILE_K + 8u;  // halves per shared row (80 bytes: 16-byte aligned, skewed banks)
const uint kStrideC = GEMM_TILE_N + 4u;  // floats per shared C row
shared float16_t a_hi[GEMM_TILE_M * kStrideH];
shared float16_t a_lo[GEMM_TILE_M * kStrideH];
shared float16_t w_half[GEMM_TILE_N * kStrideH];
shared float c_tile[GEMM_TILE_M * kStrideC];

const uint kRowsPerSubgroup = 32u / lM, kColsPerSubgroup = 32u / lN;
fcoopmatNV<32, gl_ScopeSubgroup, lM, lN> acc[kRowsPerSubgroup][kColsPerSubgroup];

uint coop_load_row() { return gl_LocalInvocationIndex / 2u; }
uint coop_load_depth() { return (gl_LocalInvocationIndex % 2u) * 16u; }

void clear_coop_sums() {
  [[unroll]] for (uint i = 0u; i < kRowsPerSubgroup; ++i)
    [[unroll]] for (uint j = 0u; j < kColsPerSubgroup; ++j) acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, lM, lN>(0.0);
}
// 16 values of this invocation's A row (f32) into the f16 tile(s).
void store_a16(vec4 v[4]) {
  uint base = coop_load_row() * kStrideH + coop_load_depth();
  [[unroll]] for (uint i = 0u; i < 4u; ++i)
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
      float16_t hi = float16_t(v[i][j]);
      a_hi[base + 4u * i + j] = hi;
      if (SPLIT_A) a_lo[base + 4u * i + j] = float16_t(v[i][j] - float(hi));
    }
}
void store_w16(vec4 v[4]) {
  uint base = coop_load_row() * kStrideH + coop_load_depth();
  [[unroll]] for (uint i = 0u; i < 4u; ++i) [[unroll]] for (uint j = 0u; j < 4u; ++j) w_half[base + 4u * i + j] = float16_t(v[i][j]);
}
void multiply_coop_tiles() {
  uint sub_m = (gl_SubgroupID / 2u) * 32u, sub_n = (gl_SubgroupID % 2u) * 32u;
  [[unroll]] for (uint k = 0u; k < GEMM_TILE_K; k += lK) {
    fcoopmatNV<16, gl_ScopeSubgroup, lM, lK> a[kRowsPerSubgroup];
    fcoopmatNV<16, gl_ScopeSubgroup, lM, lK> a2[kRowsPerSubgroup];
    [[unroll]] for (uint i = 0u; i < kRowsPerSubgroup; ++i) {
      coopMatLoadNV(a[i], a_hi, (sub_m + i * lM) * kStrideH + k, kStrideH, false);
      if (SPLIT_A) coopMatLoadNV(a2[i], a_lo, (sub_m + i * lM) * kStrideH + k, kStrideH, false);
    }
    [[unroll]] for (uint j = 0u; j < kColsPerSubgroup; ++j) {
      fcoopmatNV<16, gl_ScopeSubgroup, lK, lN> b;
      // W rows are B's columns: column-major B from the row-major W tile.
      coopMatLoadNV(b, w_half, (sub_n + j * lN) * kStrideH + k, kStrideH, true);
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

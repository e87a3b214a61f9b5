#version 450
#extension GL_GOOGLE_include_directive : require
// Which element of a 16 x 16 cooperative matrix each lane holds (CoopLayoutArgs), for an f32
// accumulator and for an f16 B operand loaded as the GEMMs load W (column-major from a row-major
// tile of W rows): the device's layouts, from which Kernels::accumulator_layout() and
// Kernels::operand_layout() read COOP_ACC_*'s maps for the GEMMs that read their accumulators, or
// write their W operands, element by element.
#include "common.glsl"
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 32) in;
layout(push_constant) uniform Push { CoopLayoutArgs args; };
// The product's shape as the GEMMs take it (specialization constants, so that A, B and the
// accumulator are three types and the KHR form gives each its use).
layout(constant_id = SPEC_COOP_M) const uint lM = 16u;
layout(constant_id = SPEC_COOP_N) const uint lN = 16u;
layout(constant_id = SPEC_COOP_K) const uint lK = 16u;
shared float indices[256];
shared float16_t w_indices[256];

void main() {
  uint lane = gl_LocalInvocationIndex;
  for (uint i = lane; i < 256u; i += 32u) {
    indices[i] = float(i);
    w_indices[i] = float16_t(i);
  }
  barrier();
  Floats target = Floats(args.target);
  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> m;
  coopMatLoadNV(m, indices, 0u, 16u, false);
  for (uint e = 0u; e < uint(m.length()) && e < COOP_ACC_ELEMENTS; ++e) target.v[lane * COOP_ACC_ELEMENTS + e] = m[e];
  if (lane == 0u) target.v[32u * COOP_ACC_ELEMENTS] = float(m.length());
  // B's element (k, n) is W row n's value k: index n * 16 + k.
  const uint kB = COOP_LAYOUT_B_PROBE;
  fcoopmatNV<16, gl_ScopeSubgroup, lK, lN> b;
  coopMatLoadNV(b, w_indices, 0u, 16u, true);
  for (uint e = 0u; e < uint(b.length()) && e < COOP_ACC_ELEMENTS; ++e) target.v[kB + lane * COOP_ACC_ELEMENTS + e] = float(b[e]);
  if (lane == 0u) target.v[kB + 32u * COOP_ACC_ELEMENTS] = float(b.length());
  // b in a product, as the GEMMs use it (its sum is never written: no index matrix sums to -1).
  fcoopmatNV<16, gl_ScopeSubgroup, lM, lK> a;
  coopMatLoadNV(a, w_indices, 0u, 16u, false);
  fcoopmatNV<32, gl_ScopeSubgroup, lM, lN> c = fcoopmatNV<32, gl_ScopeSubgroup, lM, lN>(0.0);
  c = coopMatMulAddNV(a, b, c);
  if (c[0] == -1.0) target.v[0] = c[1];
}

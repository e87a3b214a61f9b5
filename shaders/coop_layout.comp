#version 450
#extension GL_GOOGLE_include_directive : require
// Which element of a 16 x 16 f32 cooperative matrix each lane holds (CoopLayoutArgs): the device's
// layout, from which Kernels::accumulator_layout() reads COOP_ACC_*'s map for the GEMMs that read
// their accumulators element by element.
#include "common.glsl"
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
layout(local_size_x = 32) in;
layout(push_constant) uniform Push { CoopLayoutArgs args; };
shared float indices[256];

void main() {
  uint lane = gl_LocalInvocationIndex;
  for (uint i = lane; i < 256u; i += 32u) indices[i] = float(i);
  barrier();
  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> m;
  coopMatLoadNV(m, indices, 0u, 16u, false);
  Floats target = Floats(args.target);
  for (uint e = 0u; e < uint(m.length()) && e < COOP_ACC_ELEMENTS; ++e) target.v[lane * COOP_ACC_ELEMENTS + e] = m[e];
  if (lane == 0u) target.v[32u * COOP_ACC_ELEMENTS] = float(m.length());
}

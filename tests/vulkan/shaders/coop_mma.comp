#version 450
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
// The cooperative matrices' own time (a measuring kernel; test-only, never in the shipped tools; also
// in VK_KHR_cooperative_matrix's form as coop_mma_khr, tests/vulkan/shaders/CMakeLists.txt):
// every subgroup runs `steps` rounds of CHAINS independent f32 accumulators, one 16 x 16 x 16
// f16 product on each per round, so one chain times a product's latency (each waits for the last)
// and many chains the matrix units' rate. With LOAD_EACH the round's A and B are loaded from shared
// memory first (what a GEMM's step does), else they stay in registers. What the products sum only
// decides a write that real data never makes.
layout(local_size_x = 128) in;
layout(constant_id = 0) const uint CHAINS = 1u;
layout(constant_id = 1) const bool LOAD_EACH = false;
// The shape as specialization constants (left at 16): A (M x K), B (K x N) and the accumulators
// (M x N) are then three types, so scripts/spirv_coop_khr.py can give each its KHR use.
layout(constant_id = 2) const uint M = 16u;
layout(constant_id = 3) const uint N = 16u;
layout(constant_id = 4) const uint K = 16u;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Floats { float v[]; };
layout(push_constant) uniform Push { uvec2 sink; uint steps; } push;
shared float16_t tiles[4][2][2 * 16 * 16];  // per subgroup: A's and B's two 16 x 16 copies

#define FLOAT_MAT fcoopmatNV<32, gl_ScopeSubgroup, M, N>
void main() {
  uint sub = gl_SubgroupID;
  for (uint i = gl_SubgroupInvocationID; i < 512u; i += 32u) {
    tiles[sub][0][i] = float16_t(float(i % 7u) * 0.001);
    tiles[sub][1][i] = float16_t(float(i % 5u) * 0.001);
  }
  barrier();
  fcoopmatNV<16, gl_ScopeSubgroup, M, K> a;
  fcoopmatNV<16, gl_ScopeSubgroup, K, N> b;
  coopMatLoadNV(a, tiles[sub][0], 0u, 16u, false);
  coopMatLoadNV(b, tiles[sub][1], 0u, 16u, true);
  FLOAT_MAT c[8];
  // Each chain from its own start, so that no compiler can fold two identical chains into one.
  [[unroll]] for (uint k = 0u; k < 8u; ++k) c[k] = FLOAT_MAT(float(k) * 0.25);
  for (uint s = 0u; s < push.steps; ++s) {
    if (LOAD_EACH) {
      coopMatLoadNV(a, tiles[sub][0], (s & 1u) * 256u, 16u, false);
      coopMatLoadNV(b, tiles[sub][1], (s & 1u) * 256u, 16u, true);
    }
    [[unroll]] for (uint k = 0u; k < 8u; ++k)
      if (k < CHAINS) c[k] = coopMatMulAddNV(a, b, c[k]);
  }
  FLOAT_MAT sum = c[0];
  [[unroll]] for (uint k = 1u; k < 8u; ++k)
    if (k < CHAINS) sum = sum + c[k];
  if (sum[0] == 1234.5 && push.steps == 0xFFFFFFFFu) Floats(push.sink).v[0] = sum[1];
}

#version 450
#extension GL_NV_cooperative_matrix : require
#extension GL_NV_integer_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
// coop_mma.comp's chains with 8-bit integer products (a measuring kernel; test-only, also in
// VK_KHR_cooperative_matrix's form as coop_mma_int8_khr): every subgroup runs `steps` rounds of
// CHAINS independent 32-bit integer accumulators, one 16 x 16 x 32 signed 8-bit product on each per
// round; with LOAD_EACH the round's A and B are loaded from shared memory first. Where a device lists
// this product, its latency and rate beside the f16 one's say what an expert GEMM on integer
// products (vulkan-engine.md, Open work) could gain.
layout(local_size_x = 128) in;
layout(constant_id = 0) const uint CHAINS = 1u;
layout(constant_id = 1) const bool LOAD_EACH = false;
layout(constant_id = 2) const uint M = 16u;
layout(constant_id = 3) const uint N = 16u;
layout(constant_id = 4) const uint K = 32u;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Ints { int v[]; };
layout(push_constant) uniform Push { uvec2 sink; uint steps; } push;
shared uint tiles[4][2][2 * 16 * 32 / 4];  // per subgroup: A's and B's two 16 x 32 copies, 4 bytes a word

#define INT_MAT icoopmatNV<32, gl_ScopeSubgroup, M, N>
void main() {
  uint sub = gl_SubgroupID;
  for (uint i = gl_SubgroupInvocationID; i < 256u; i += 32u) {
    tiles[sub][0][i] = 0x01020304u * (i % 7u);
    tiles[sub][1][i] = 0x03010201u * (i % 5u);
  }
  barrier();
  icoopmatNV<8, gl_ScopeSubgroup, M, K> a;
  icoopmatNV<8, gl_ScopeSubgroup, K, N> b;
  // Strides in words: a row of A is 32 bytes, a column of B (column-major) 32 bytes.
  coopMatLoadNV(a, tiles[sub][0], 0u, 8u, false);
  coopMatLoadNV(b, tiles[sub][1], 0u, 8u, true);
  INT_MAT c[8];
  // Each chain from its own start, so that no compiler can fold two identical chains into one.
  [[unroll]] for (uint k = 0u; k < 8u; ++k) c[k] = INT_MAT(int(k));
  for (uint s = 0u; s < push.steps; ++s) {
    if (LOAD_EACH) {
      coopMatLoadNV(a, tiles[sub][0], (s & 1u) * 128u, 8u, false);
      coopMatLoadNV(b, tiles[sub][1], (s & 1u) * 128u, 8u, true);
    }
    [[unroll]] for (uint k = 0u; k < 8u; ++k)
      if (k < CHAINS) c[k] = coopMatMulAddNV(a, b, c[k]);
  }
  INT_MAT sum = c[0];
  [[unroll]] for (uint k = 1u; k < 8u; ++k)
    if (k < CHAINS) sum = sum + c[k];
  if (sum[0] == 12345 && push.steps == 0xFFFFFFFFu) Ints(push.sink).v[0] = sum[1];
}

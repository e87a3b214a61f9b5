#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_quad : require
// Decode, first expert projection with SwiGLU, MXFP4 read in place: workgroup (x, slot) computes
// WORKGROUP_SIZE / 4 outputs j of expert chosen[slot], one quad of lanes per output: rows 2j
// (gate) and 2j+1 (up) of its mlp1, each lane taking every 4th 32-value block (two blocks per
// pass, so four 16-byte loads are in flight), plus bias; then
// act[slot, j] = (clamp(up, -limit, limit) + 1) * gate * sigmoid(1.702 gate), gate = min(gate, limit).
// The eight outputs of a subgroup read the same input values at once (one load serves them).
#include "common.glsl"
layout(local_size_x = WORKGROUP_SIZE) in;
layout(push_constant) uniform Push { ExpertMlp1Args args; };

float block_dot(uint block, uint x_base) {
  uvec4 q = PROBE == 2u ? uvec4(block) : QuadsIn(args.blocks).v[block];
  if (PROBE == 1u)
    return uintBitsToFloat(q.x ^ q.y ^ q.z ^ q.w) * Vec4sIn(args.x).v[x_base].x * mxfp4_scale(args.scales, block);
  vec4 lo, hi;
  float sum = 0.0;
  fp4x8(q.x, lo, hi);
  sum += dot(lo, Vec4sIn(args.x).v[x_base]) + dot(hi, Vec4sIn(args.x).v[x_base + 1u]);
  fp4x8(q.y, lo, hi);
  sum += dot(lo, Vec4sIn(args.x).v[x_base + 2u]) + dot(hi, Vec4sIn(args.x).v[x_base + 3u]);
  fp4x8(q.z, lo, hi);
  sum += dot(lo, Vec4sIn(args.x).v[x_base + 4u]) + dot(hi, Vec4sIn(args.x).v[x_base + 5u]);
  fp4x8(q.w, lo, hi);
  sum += dot(lo, Vec4sIn(args.x).v[x_base + 6u]) + dot(hi, Vec4sIn(args.x).v[x_base + 7u]);
  return sum * mxfp4_scale(args.scales, block);
}

void main() {
  load_fp4_table();
  uint slot = gl_WorkGroupID.y;
  uint lane = gl_LocalInvocationIndex % EXPERT_LANES_PER_OUTPUT;
  uint j = gl_WorkGroupID.x * (WORKGROUP_SIZE / EXPERT_LANES_PER_OUTPUT) + gl_LocalInvocationIndex / EXPERT_LANES_PER_OUTPUT;
  bool in_range = j < args.intermediate;
  uint expert = WordsIn(args.chosen).v[slot];
  uint blocks = args.hidden / 32u;
  uint gate_row = expert * 2u * args.intermediate + 2u * (in_range ? j : 0u);
  float gate = 0.0, up = 0.0;
  if (in_range) {
    uint b = lane;
    for (; b + EXPERT_LANES_PER_OUTPUT < blocks; b += 2u * EXPERT_LANES_PER_OUTPUT) {
      uint b2 = b + EXPERT_LANES_PER_OUTPUT;
      gate += block_dot(gate_row * blocks + b, b * 8u) + block_dot(gate_row * blocks + b2, b2 * 8u);
      up += block_dot((gate_row + 1u) * blocks + b, b * 8u) + block_dot((gate_row + 1u) * blocks + b2, b2 * 8u);
    }
    if (b < blocks) {
      gate += block_dot(gate_row * blocks + b, b * 8u);
      up += block_dot((gate_row + 1u) * blocks + b, b * 8u);
    }
  }
  gate += subgroupQuadSwapHorizontal(gate);
  gate += subgroupQuadSwapVertical(gate);
  up += subgroupQuadSwapHorizontal(up);
  up += subgroupQuadSwapVertical(up);
  if (in_range && lane == 0u) {
    gate = min(gate + FloatsIn(args.bias).v[gate_row], args.limit);
    up = clamp(up + FloatsIn(args.bias).v[gate_row + 1u], -args.limit, args.limit);
    float glu = gate / (1.0 + exp(-1.702 * gate));
    Floats(args.act).v[slot * args.intermediate + j] = (up + 1.0) * glu;
  }
}

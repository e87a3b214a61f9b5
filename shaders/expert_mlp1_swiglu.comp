#version 450
#extension GL_GOOGLE_include_directive : require
// First expert projection and SwiGLU for the selected experts, reading MXFP4 in place.
// Workgroup (g, slot) of 8 groups of 32 lanes: group i computes output j = 8g + i of expert
// chosen[slot], i.e. rows 2j (gate) and 2j+1 (up) of its mlp1 (both in one pass over the blocks,
// so twice the loads are in flight), plus bias; then
// act[slot, j] = (clamp(up, -limit, limit) + 1) * gate * sigmoid(1.702 * gate), gate = min(gate, limit).
#include "dense_decode.glsl"
#include "mxfp4_rows.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Blocks { uvec4 blocks4[]; };
layout(std430, binding = 1) readonly buffer Scales { uint scale_words[]; };
layout(std430, binding = 2) readonly buffer Bias { uint bias_words[]; };
layout(std430, binding = 3) readonly buffer X { vec4 x4[]; };
layout(std430, binding = 4) readonly buffer Chosen { uint chosen[]; };
layout(std430, binding = 5) writeonly buffer Act { float act[]; };  // [k, intermediate]
layout(push_constant) uniform Push { uint hidden; uint intermediate; uint bias_encoding; float limit; } push;
DEFINE_DENSE_LOADER(load_bias, bias_words)
DEFINE_MXFP4_BLOCK_DOT(block_dot, blocks4, scale_words, x4)

void main() {
  load_fp4_table();
  uint t = gl_LocalInvocationIndex;
  uint slot = gl_WorkGroupID.y;
  uint lane = t & 31u;
  uint j = gl_WorkGroupID.x * 8u + t / 32u;
  bool in_range = j < push.intermediate;  // no early return: lane_group_sums has barriers
  uint blocks = push.hidden / 32u;
  uint gate_row = chosen[slot] * 2u * push.intermediate + 2u * (in_range ? j : 0u);
  float gate = 0.0, up = 0.0;
  if (in_range) {
    for (uint b = lane; b < blocks; b += 32u) {
      gate += block_dot(gate_row * blocks + b, b * 8u);
      up += block_dot((gate_row + 1u) * blocks + b, b * 8u);
    }
  }
  lane_sums[0][t] = gate;
  lane_sums[1][t] = up;
  lane_group_sums(2u);
  if (in_range && lane == 0u) {
    gate = min(lane_sums[0][t] + load_bias(push.bias_encoding, gate_row), push.limit);
    up = clamp(lane_sums[1][t] + load_bias(push.bias_encoding, gate_row + 1u), -push.limit, push.limit);
    float glu = gate / (1.0 + exp(-1.702 * gate));
    act[slot * push.intermediate + j] = (up + 1.0) * glu;
  }
}

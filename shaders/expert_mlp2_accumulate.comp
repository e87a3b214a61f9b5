#version 450
#extension GL_GOOGLE_include_directive : require
// Down projection of the selected experts (MXFP4 in place) plus bias, weighted by the router and
// added to the residual: x[d] += sum over experts in index order of w_e * (W2_e[d] . act_e + b2_e[d]).
// 8 groups of 32 lanes per workgroup, group i owning output d = 8 * workgroup + i: the k dot
// products first, then lane 0 sums them in expert-index order (the CPU engine's order).
#include "dense_decode.glsl"
#include "mxfp4_rows.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Blocks { uvec4 blocks4[]; };
layout(std430, binding = 1) readonly buffer Scales { uint scale_words[]; };
layout(std430, binding = 2) readonly buffer Bias { uint bias_words[]; };
layout(std430, binding = 3) readonly buffer Act { vec4 act4[]; };  // [k, intermediate]
layout(std430, binding = 4) readonly buffer Chosen { uint chosen[]; };
layout(std430, binding = 5) readonly buffer Weights { float weights[]; };
layout(std430, binding = 6) buffer Residual { float residual[]; };
layout(push_constant) uniform Push { uint hidden; uint intermediate; uint bias_encoding; uint k; } push;
DEFINE_DENSE_LOADER(load_bias, bias_words)
DEFINE_MXFP4_ROW_DOT4(mxfp4_dot, blocks4, scale_words, act4)

const uint kMaxK = 32u;
shared float expert_out[8][kMaxK];
void main() {
  load_fp4_table();
  uint group = gl_LocalInvocationIndex / 32u, lane = gl_LocalInvocationIndex & 31u;
  uint d = gl_WorkGroupID.x * 8u + group;
  bool in_range = d < push.hidden;  // no early return: lane_group_sum has barriers
  uint k = min(push.k, kMaxK);
  uint blocks = push.intermediate / 32u;
  for (uint slot = 0u; slot < k; ++slot) {
    uint row = chosen[slot] * push.hidden + (in_range ? d : 0u);
    float total = lane_group_sum(in_range ? mxfp4_dot(row, blocks, slot * push.intermediate / 4u, lane) : 0.0);
    if (lane == 0u && in_range) expert_out[group][slot] = weights[slot] * (total + load_bias(push.bias_encoding, row));
  }
  if (lane == 0u && in_range) {
    float sum = 0.0;
    uint previous = 0u;
    for (uint n = 0u; n < k; ++n) {  // slots by increasing expert index
      uint best = kMaxK;
      for (uint slot = 0u; slot < k; ++slot) {
        uint e = chosen[slot];
        if ((n == 0u || e > previous) && (best == kMaxK || e < chosen[best])) best = slot;
      }
      previous = chosen[best];
      sum += expert_out[group][best];
    }
    residual[d] += sum;
  }
}

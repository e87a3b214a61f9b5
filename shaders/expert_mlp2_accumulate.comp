#version 450
#extension GL_GOOGLE_include_directive : require
// Down projection of the selected experts (MXFP4 in place) plus bias, weighted by the router and
// added to the residual: x[d] += sum over experts in index order of w_e * (W2_e[d] . act_e + b2_e[d]).
// 8 groups of 32 lanes per workgroup, group i owning output d = 8 * workgroup + i: the k dot
// products (no barrier between them), one reduction for all of them, then lane 0 sums them in
// expert-index order (the CPU engine's order).
#define kMaxSums 32u
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
DEFINE_MXFP4_BLOCK_DOT(block_dot, blocks4, scale_words, act4)

void main() {
  load_fp4_table();
  uint t = gl_LocalInvocationIndex;
  uint lane = t & 31u;
  uint d = gl_WorkGroupID.x * 8u + t / 32u;
  bool in_range = d < push.hidden;  // no early return: lane_group_sums has barriers
  uint k = min(push.k, kMaxSums);
  uint blocks = push.intermediate / 32u;
  for (uint slot = 0u; slot < k; ++slot) {
    float dot = 0.0;
    if (in_range) {
      uint row = chosen[slot] * push.hidden + d;
      for (uint b = lane; b < blocks; b += 32u) dot += block_dot(row * blocks + b, (slot * push.intermediate) / 4u + b * 8u);
    }
    lane_sums[slot][t] = dot;
  }
  lane_group_sums(k);
  if (lane == 0u && in_range) {
    float sum = 0.0;
    uint previous = 0u;
    for (uint n = 0u; n < k; ++n) {  // slots by increasing expert index
      uint best = kMaxSums;
      for (uint slot = 0u; slot < k; ++slot) {
        uint e = chosen[slot];
        if ((n == 0u || e > previous) && (best == kMaxSums || e < chosen[best])) best = slot;
      }
      previous = chosen[best];
      uint row = chosen[best] * push.hidden + d;
      sum += weights[best] * (lane_sums[best][t] + load_bias(push.bias_encoding, row));
    }
    residual[d] += sum;
  }
}

#version 450
#extension GL_GOOGLE_include_directive : require
// Down projection of the selected experts (MXFP4 in place) plus bias, weighted by the router and
// added to the residual: x[d] += sum over experts in index order of w_e * (W2_e[d] . act_e + b2_e[d]).
// One workgroup per output element d; the k dot products first, then one invocation sums them in
// expert-index order (the CPU engine's order).
#include "dense_decode.glsl"
#include "mxfp4_decode.glsl"
#include "workgroup_reduce.glsl"
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Blocks { uint block_words[]; };
layout(std430, binding = 1) readonly buffer Scales { uint scale_words[]; };
layout(std430, binding = 2) readonly buffer Bias { uint bias_words[]; };
layout(std430, binding = 3) readonly buffer Act { float act[]; };  // [k, intermediate]
layout(std430, binding = 4) readonly buffer Chosen { uint chosen[]; };
layout(std430, binding = 5) readonly buffer Weights { float weights[]; };
layout(std430, binding = 6) buffer Residual { float residual[]; };
layout(push_constant) uniform Push { uint hidden; uint intermediate; uint bias_encoding; uint k; } push;
DEFINE_DENSE_LOADER(load_bias, bias_words)
DEFINE_MXFP4_ROW_DOT(mxfp4_dot, block_words, scale_words, act)

const uint kMaxK = 32u;
shared float expert_out[kMaxK];
void main() {
  uint d = gl_WorkGroupID.x;
  uint t = gl_LocalInvocationIndex;
  uint k = min(push.k, kMaxK);
  for (uint slot = 0u; slot < k; ++slot) {
    uint row = chosen[slot] * push.hidden + d;
    float total = workgroup_sum(mxfp4_dot(row, push.intermediate / 32u, slot * push.intermediate, t, 64u));
    if (t == 0u) expert_out[slot] = weights[slot] * (total + load_bias(push.bias_encoding, row));
  }
  if (t == 0u) {
    float sum = 0.0;
    uint previous = 0u;
    for (uint n = 0u; n < k; ++n) {  // slots by increasing expert index
      uint best = kMaxK;
      for (uint slot = 0u; slot < k; ++slot) {
        uint e = chosen[slot];
        if ((n == 0u || e > previous) && (best == kMaxK || e < chosen[best])) best = slot;
      }
      previous = chosen[best];
      sum += expert_out[best];
    }
    residual[d] += sum;
  }
}

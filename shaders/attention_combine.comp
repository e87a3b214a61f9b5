#version 450
#extension GL_GOOGLE_include_directive : require
// The decode attention of head h from its key ranges' partials: with M the largest of the sink
// and the ranges' maxima, out = sum_s e^(m_s - M) V_s / (e^(sink - M) + sum_s e^(m_s - M) l_s),
// the sink's probability dropped, as the CPU engine's softmax. One workgroup per head.
#include "common.glsl"
layout(local_size_x = WORKGROUP_SIZE) in;
layout(push_constant) uniform Push { AttentionCombineArgs args; };

void main() {
  uint h = gl_WorkGroupID.x;
  uint D = args.head_dim;
  FloatsIn partials = FloatsIn(args.partials);
  float sink = FloatsIn(args.sinks).v[h];
  float top = sink;
  for (uint s = 0u; s < args.splits; ++s) top = max(top, partials.v[(h * args.splits + s) * (D + 2u) + D]);
  float denominator = exp(sink - top);
  for (uint s = 0u; s < args.splits; ++s) {
    uint base = (h * args.splits + s) * (D + 2u);
    denominator += partials.v[base + D + 1u] * exp(partials.v[base + D] - top);
  }
  for (uint d = gl_LocalInvocationIndex; d < D; d += WORKGROUP_SIZE) {
    float sum = 0.0;
    for (uint s = 0u; s < args.splits; ++s) {
      uint base = (h * args.splits + s) * (D + 2u);
      sum += partials.v[base + d] * exp(partials.v[base + D] - top);
    }
    Floats(args.target).v[h * D + d] = sum / denominator;
  }
}

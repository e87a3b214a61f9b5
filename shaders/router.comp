#version 450
#extension GL_GOOGLE_include_directive : require
// The MoE router of token t (one workgroup each, t < count; 1024 invocations, so that each expert
// of a 32-expert layer has its own subgroup), fused with the RMSNorm before it:
// xn[t] = RMSNorm(x[t]) * norm (the experts' input), logits = W xn + bias (one subgroup per
// expert, W [experts, hidden] in ENCODING), the k largest in descending order (ties to the lower
// expert, as the CPU engine's partial sort) by ranking every expert in parallel, and the softmax
// over those k.
#include "common.glsl"
layout(local_size_x = ROUTER_WORKGROUP_SIZE) in;
layout(push_constant) uniform Push { RouterArgs args; };

shared float logits[kMaxExperts];
shared uint ranked[kMaxExpertsPerToken];

void main() {
  uint t = gl_WorkGroupID.x;
  uint H = args.hidden;
  uint base = t * H;
  float sum_squares = 0.0;
  for (uint i = gl_LocalInvocationIndex; i < H / 4u; i += ROUTER_WORKGROUP_SIZE) {
    vec4 v = Vec4sIn(args.x).v[base / 4u + i];
    sum_squares += dot(v, v);
  }
  float inv_rms = 1.0 / sqrt(workgroup_sum(sum_squares) / float(H) + args.eps);
  for (uint i = gl_LocalInvocationIndex; i < H / 4u; i += ROUTER_WORKGROUP_SIZE)
    Vec4s(args.xn).v[base / 4u + i] = (Vec4sIn(args.x).v[base / 4u + i] * inv_rms) * Vec4sIn(args.norm).v[i];

  for (uint e = gl_SubgroupID; e < args.experts; e += gl_NumSubgroups) {
    float acc = 0.0;
    for (uint c = gl_SubgroupInvocationID; c < H / 8u; c += gl_SubgroupSize) {
      vec4 xlo = (Vec4sIn(args.x).v[base / 4u + 2u * c] * inv_rms) * Vec4sIn(args.norm).v[2u * c];
      vec4 xhi = (Vec4sIn(args.x).v[base / 4u + 2u * c + 1u] * inv_rms) * Vec4sIn(args.norm).v[2u * c + 1u];
      vec4 wlo, whi;
      load8(args.weight, args.scales, e * H + 8u * c, wlo, whi);
      acc += dot(wlo, xlo) + dot(whi, xhi);
    }
    acc = subgroupAdd(acc);
    if (subgroupElect()) logits[e] = acc + FloatsIn(args.bias).v[e];
  }
  if (gl_LocalInvocationIndex < kMaxExpertsPerToken) ranked[gl_LocalInvocationIndex] = 0u;  // NaN logits rank none
  barrier();
  uint k = min(args.k, args.experts);
  for (uint e = gl_LocalInvocationIndex; e < args.experts; e += ROUTER_WORKGROUP_SIZE) {
    float value = logits[e];
    uint rank = 0u;
    for (uint o = 0u; o < args.experts; ++o) {
      float other = logits[o];
      if (other > value || (other == value && o < e)) ++rank;
    }
    if (rank < k) ranked[rank] = e;
  }
  barrier();
  if (gl_LocalInvocationIndex == 0u) {
    float top = logits[ranked[0]];
    float w[kMaxExpertsPerToken];
    float sum = 0.0;
    for (uint s = 0u; s < k; ++s) {
      Words(args.chosen).v[t * k + s] = ranked[s];
      w[s] = exp(logits[ranked[s]] - top);
      sum += w[s];
    }
    for (uint s = 0u; s < k; ++s) Floats(args.gate_weights).v[t * k + s] = w[s] / sum;
  }
}

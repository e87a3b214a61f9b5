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
    // Four chunks per lane per pass, loaded before any is used (latency bounds a short row).
    const uint kBatch = 4u;
    uint chunks = H / 8u, step = gl_SubgroupSize;
    for (uint c0 = gl_SubgroupInvocationID; c0 < chunks; c0 += kBatch * step) {
      vec4 w[kBatch][2], x[kBatch][2], n[kBatch][2];
      [[unroll]] for (uint u = 0u; u < kBatch; ++u) {
        uint c = min(c0 + u * step, chunks - 1u);
        load8(args.weight, args.scales, e * H + 8u * c, w[u][0], w[u][1]);
        x[u][0] = Vec4sIn(args.x).v[base / 4u + 2u * c];
        x[u][1] = Vec4sIn(args.x).v[base / 4u + 2u * c + 1u];
        n[u][0] = Vec4sIn(args.norm).v[2u * c];
        n[u][1] = Vec4sIn(args.norm).v[2u * c + 1u];
      }
      [[unroll]] for (uint u = 0u; u < kBatch; ++u)
        if (c0 + u * step < chunks)
          acc += dot(w[u][0], (x[u][0] * inv_rms) * n[u][0]) + dot(w[u][1], (x[u][1] * inv_rms) * n[u][1]);
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

#version 450
#extension GL_GOOGLE_include_directive : require
// The MoE router, fused with the RMSNorm before it: xn[t] = RMSNorm(x[t]) * norm (the experts'
// input), logits = W xn + bias (W [experts, hidden] in ENCODING), ranked (expert_ranking.glsl)
// into chosen and gate_weights: the k largest and their softmax.
//
// Workgroup (g, t) computes the logits of expert group g of token t; each expert's row is split
// over NumSubgroups / (experts in the group) subgroups. Prefill has one group per token (every
// expert in one workgroup), which ranks them. Decode has one token, and a single workgroup reading
// 32 rows would be latency bound (17.7 us on the H100 for 184 KB), so its experts are spread over
// groups of ROUTER_DECODE_EXPERTS workgroups that write their logits to `logits` and are done: the
// decode expert kernels rank them (a last workgroup merging and ranking cost the chain ~5 us of
// waiting on memory barriers, an atomic and the partials). x (times norm) is staged once per
// workgroup, and the RMS factor, one scalar, is applied to each logit.
#include "common.glsl"
#include "expert_ranking.glsl"
layout(local_size_x = ROUTER_WORKGROUP_SIZE) in;
layout(push_constant) uniform Push { RouterArgs args; };

shared float part_sums[ROUTER_WORKGROUP_SIZE / 4u];  // one per subgroup (subgroups of 4 at least)
shared vec4 staged_lo[kMaxRouterHidden / 8u], staged_hi[kMaxRouterHidden / 8u];

void main() {
  uint t = gl_WorkGroupID.y, g = gl_WorkGroupID.x, groups = gl_NumWorkGroups.x;
  uint H = args.hidden, chunks = H / 8u;
  uint base = t * H / 4u;  // x[t] in vec4s
  float sum_squares = 0.0;
  for (uint c = gl_LocalInvocationIndex; c < chunks; c += ROUTER_WORKGROUP_SIZE) {
    vec4 lo = Vec4sIn(args.x).v[base + 2u * c], hi = Vec4sIn(args.x).v[base + 2u * c + 1u];
    sum_squares += dot(lo, lo) + dot(hi, hi);
    staged_lo[c] = lo * Vec4sIn(args.norm).v[2u * c];
    staged_hi[c] = hi * Vec4sIn(args.norm).v[2u * c + 1u];
  }
  float inv_rms = 1.0 / sqrt(workgroup_sum(sum_squares) / float(H) + args.eps);  // its barriers order the staging
  if (g == 0u)
    for (uint c = gl_LocalInvocationIndex; c < chunks; c += ROUTER_WORKGROUP_SIZE) {
      Vec4s(args.xn).v[base + 2u * c] = staged_lo[c] * inv_rms;
      Vec4s(args.xn).v[base + 2u * c + 1u] = staged_hi[c] * inv_rms;
    }

  uint per_group = (args.experts + groups - 1u) / groups;
  uint first = min(g * per_group, args.experts), here = min(per_group, args.experts - first);
  // Subgroups per expert (at least one); parts of a row: chunks part, part + parts, ...
  uint parts = max(1u, gl_NumSubgroups / max(here, 1u));
  for (uint e0 = 0u; e0 < here; e0 += gl_NumSubgroups / parts) {
    uint e_local = e0 + gl_SubgroupID / parts, part = gl_SubgroupID % parts;
    bool working = e_local < here && gl_SubgroupID < (gl_NumSubgroups / parts) * parts;
    float acc = 0.0;
    if (working) {
      uint e = first + e_local;
      // Four chunks per lane per pass, loaded before any is used (latency bounds a short row).
      const uint kBatch = 4u;
      uint lane_chunk = part * gl_SubgroupSize + gl_SubgroupInvocationID, stride = parts * gl_SubgroupSize;
      for (uint c0 = lane_chunk; c0 < chunks; c0 += kBatch * stride) {
        uvec4 raw[kBatch][2];
        [[unroll]] for (uint u = 0u; u < kBatch; ++u)
          load_raw8(args.weight, args.scales, e * H + 8u * min(c0 + u * stride, chunks - 1u), raw[u][0], raw[u][1]);
        [[unroll]] for (uint u = 0u; u < kBatch; ++u) {
          uint c = c0 + u * stride;
          if (c >= chunks) break;
          vec4 lo, hi;
          decode_raw8(args.weight, raw[u][0], raw[u][1], e * H + 8u * c, lo, hi);
          acc += dot(lo, staged_lo[c]) + dot(hi, staged_hi[c]);
        }
      }
    }
    acc = subgroupAdd(acc);
    if (subgroupElect()) part_sums[gl_SubgroupID] = acc;
    barrier();
    if (gl_LocalInvocationIndex < gl_NumSubgroups / parts && e0 + gl_LocalInvocationIndex < here) {
      uint e_local2 = e0 + gl_LocalInvocationIndex, e = first + e_local2;
      float sum = 0.0;
      for (uint p = 0u; p < parts; ++p) sum += part_sums[gl_LocalInvocationIndex * parts + p];
      float logit = sum * inv_rms + FloatsIn(args.bias).v[e];
      if (has_address(args.logits))
        Floats(args.logits).v[e] = logit;
      else
        logits[e] = logit;
    }
    barrier();
  }
  if (has_address(args.logits)) return;  // decode: the expert kernels rank the logits
  uint k = min(args.k, args.experts);
  rank_experts(args.experts, k, ROUTER_WORKGROUP_SIZE);
  if (gl_LocalInvocationIndex < k) {
    uint s = gl_LocalInvocationIndex;
    Words(args.chosen).v[t * k + s] = ranked[s];
    Floats(args.gate_weights).v[t * k + s] = ranked_weight(s, k);
  }
}

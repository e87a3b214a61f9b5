// What router.comp and router_f64.comp share (ROUTER_F64 defined: the f64 form).
// The MoE router of a batched pass, fused with the RMSNorm before it: xn[t] = RMSNorm(x[t]) * norm
// (the experts' input), logits = W (x[t] * norm) / rms(x[t]) + bias (W [experts, hidden] in
// ENCODING), ranked (expert_ranking.glsl) into chosen and gate_weights: the k largest and their
// softmax. One workgroup per token; each expert's row is split over NumSubgroups / experts
// subgroups. x * norm is staged once per workgroup in the sums' type (router_xn: in double, so
// that a product with a weight converts only the weight; the same values as converting x and the
// norm at every product). A decode step's router is router_decode.glsl.
//
// Sums (router_sums.glsl): router.comp in f32; router_f64.comp, where the device has shaderFloat64,
// in double, with 1/rms as the CPU engine's rms_norm computes it (the mean square in double) and
// the experts' input as it normalizes it ((x * 1/rms rounded to f32) * norm). Each logit is
// W[e] . (x * norm) times 1/rms plus the bias, rounded to f32 once: a logit's rounding is then
// the CPU engine's (which computes its logits so), so a router's near tie goes the way its input
// decides, not the way a sum or the normalized input was rounded.
#include "common.glsl"
#include "router_sums.glsl"
#include "expert_ranking.glsl"
layout(local_size_x = ROUTER_WORKGROUP_SIZE) in;
layout(push_constant) uniform Push { RouterArgs args; };

shared ROUTER_SUM part_sums[ROUTER_WORKGROUP_SIZE / 4u];  // one per subgroup (subgroups of 4 at least)
// Chunk c's 8 values in quarters, staged_xn[q][c]: a lane's load of a quarter is 16 bytes (in
// double) beside the next lane's, so no two lanes of a load share a bank (one array of whole chunks
// puts lanes 64 bytes apart, four to a bank).
shared ROUTER_VEC2 staged_xn[4][kMaxRouterHidden / 8u];

void main() {
  uint t = gl_WorkGroupID.y;
  uint H = args.hidden, chunks = H / 8u;
  uint base = t * H / 4u;  // x[t] in vec4s
  // One chunk of 8 values a lane at most (kMaxRouterHidden / 8 <= ROUTER_WORKGROUP_SIZE), held in
  // registers until the experts' input is written.
  uint chunk = gl_LocalInvocationIndex;
  bool mine = chunk < chunks;
  vec4 x_lo = vec4(0.0), x_hi = vec4(0.0), n_lo = vec4(0.0), n_hi = vec4(0.0);
  if (mine) {
    x_lo = Vec4sIn(args.x).v[base + 2u * chunk];
    x_hi = Vec4sIn(args.x).v[base + 2u * chunk + 1u];
    n_lo = Vec4sIn(args.norm).v[2u * chunk];
    n_hi = Vec4sIn(args.norm).v[2u * chunk + 1u];
    ROUTER_VEC4 xn_lo = router_xn(x_lo, n_lo), xn_hi = router_xn(x_hi, n_hi);
    staged_xn[0][chunk] = xn_lo.xy;
    staged_xn[1][chunk] = xn_lo.zw;
    staged_xn[2][chunk] = xn_hi.xy;
    staged_xn[3][chunk] = xn_hi.zw;
  }
  ROUTER_SUM sum_squares = ROUTER_DOT(x_lo, x_lo) + ROUTER_DOT(x_hi, x_hi);
  sum_squares = subgroupAdd(sum_squares);
  if (subgroupElect()) part_sums[gl_SubgroupID] = sum_squares;
  barrier();
  ROUTER_SUM total = ROUTER_SUM(0.0);
  for (uint s = 0u; s < gl_NumSubgroups; ++s) total += part_sums[s];
  ROUTER_SUM rms_factor = router_rms_factor(total, H, args.eps);
  if (mine) {
    Vec4s(args.xn).v[base + 2u * chunk] = router_normed(x_lo, n_lo, rms_factor);
    Vec4s(args.xn).v[base + 2u * chunk + 1u] = router_normed(x_hi, n_hi, rms_factor);
  }
  barrier();  // part_sums read before they are reused

  uint here = args.experts;
  // Subgroups per expert (at least one); parts of a row: chunks part, part + parts, ...
  uint parts = max(1u, gl_NumSubgroups / max(here, 1u));
  for (uint e0 = 0u; e0 < here; e0 += gl_NumSubgroups / parts) {
    uint e_local = e0 + gl_SubgroupID / parts, part = gl_SubgroupID % parts;
    bool working = e_local < here && gl_SubgroupID < (gl_NumSubgroups / parts) * parts;
    ROUTER_SUM acc = ROUTER_SUM(0.0);
    if (working) {
      uint e = e_local;
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
          acc += router_dot8_xn(args.weight, raw[u][0], raw[u][1], e * H + 8u * c,
                                 ROUTER_VEC4(staged_xn[0][c], staged_xn[1][c]), ROUTER_VEC4(staged_xn[2][c], staged_xn[3][c]));
        }
      }
    }
    acc = subgroupAdd(acc);
    if (subgroupElect()) part_sums[gl_SubgroupID] = acc;
    barrier();
    if (gl_LocalInvocationIndex < gl_NumSubgroups / parts && e0 + gl_LocalInvocationIndex < here) {
      uint e = e0 + gl_LocalInvocationIndex;
      ROUTER_SUM sum = ROUTER_SUM(0.0);
      for (uint p = 0u; p < parts; ++p) sum += part_sums[gl_LocalInvocationIndex * parts + p];
      float logit = float(sum * rms_factor + ROUTER_SUM(FloatsIn(args.bias).v[e]));
      logits[e] = logit;
    }
    barrier();
  }
  uint k = min(args.k, args.experts);
  rank_experts(args.experts, k, ROUTER_WORKGROUP_SIZE);
  if (gl_LocalInvocationIndex < k) {
    uint s = gl_LocalInvocationIndex;
    Words(args.chosen).v[t * k + s] = ranked[s];
    Floats(args.gate_weights).v[t * k + s] = ranked_weight(s, k);
  }
}

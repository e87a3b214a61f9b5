#version 450
#extension GL_GOOGLE_include_directive : require
// Decode: the attention-out product and the MoE router in one dispatch (the router alone cost a
// dispatch of ~13 us per layer on the H100, nearly all of it launch, barrier and latency).
//
// residual[r] += W[r] . x + bias[r] as matvec.comp (matvec.glsl), then each workgroup, holding
// its rows d0 .. d0 + n - 1 of the new residual, adds their share of every router logit,
// sum_d R[e, d] * norm[d] * residual[d], and of the sum of squares to partials[group, e] (e =
// experts: the squares), the router's rows read while the out product's loads are in flight.
// The last workgroup to finish sums the partials in a fixed order (the result does not depend on
// which finished last): logits = sum * inv_rms + router_bias (the RMS factor applied to
// the sum, as router.comp does), xn = residual * inv_rms * norm, then router_select.glsl.
#include "common.glsl"
#include "matvec.glsl"
#include "router_select.glsl"
layout(push_constant) uniform Push { MatvecRouteArgs args; };

// A workgroup's rows: subgroups (of 4 lanes at least) times rows per subgroup.
const uint kMaxGroupRows = MATVEC_WORKGROUP_SIZE / 4u * MATVEC_MAX_ROWS;
shared float new_rows[kMaxGroupRows];
shared float route_parts[MATVEC_WORKGROUP_SIZE];
shared float squares_total;

void main() {
  uint experts = args.route & ((1u << ROUTE_K_SHIFT) - 1u);
  uint k = (args.route >> ROUTE_K_SHIFT) & ((1u << (ROUTE_ENCODING_SHIFT - ROUTE_K_SHIFT)) - 1u);
  uint router_encoding = args.route >> ROUTE_ENCODING_SHIFT;
  uint t = gl_LocalInvocationIndex;
  uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  uint groups = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
  uint group_rows = gl_NumSubgroups * ROWS_PER_SUBGROUP, d0 = group * group_rows;
  uint n = d0 < args.hidden ? min(group_rows, args.hidden - d0) : 0u;
  // The router's partial sums are over the 8-value chunks that meet this workgroup's rows (values
  // outside them count zero): item = (e, chunk), e = experts for the squares; rounds of whole
  // experts' items.
  uint first_chunk = d0 / 8u, chunks = n > 0u ? (d0 + n - 1u) / 8u - first_chunk + 1u : 0u;
  uint per_round = chunks > 0u ? MATVEC_WORKGROUP_SIZE / chunks : 0u;  // experts' items per round

  uint row0 = matvec_first_row();
  bool has_rows = row0 < args.hidden;
  row0 = min(row0, args.hidden - 1u);
  matvec_load_pass(args.weight, args.scales, args.hidden, args.cols, row0, 0u);
  // The first round's router rows, in flight with the out product's.
  uvec4 route_a = uvec4(0u), route_b = uvec4(0u);
  uint e_first = chunks > 0u ? t / chunks : 0u, c_first = chunks > 0u ? t % chunks : 0u;
  if (chunks > 0u && e_first < min(per_round, experts))
    load_raw8_as(router_encoding, args.router, args.router_scales, e_first * args.hidden + 8u * (first_chunk + c_first),
                 route_a, route_b);
  matvec_stage(args.x, uvec2(0u), args.cols, false, args.eps);
  if (has_rows) {
    matvec_dot(args.weight, args.scales, args.hidden, args.cols, row0);
    SharedFloats residual = SharedFloats(args.residual);
    [[unroll]] for (uint r = 0u; r < ROWS_PER_SUBGROUP; ++r) {
      float total = subgroupAdd(row_sums[r]);
      uint row = row0 + r;
      if (subgroupElect() && row < args.hidden) {
        float v = residual.v[row] + total + FloatsIn(args.bias).v[row];
        residual.v[row] = v;
        new_rows[row - d0] = v;
      }
    }
  }
  barrier();

  SharedFloats partials = SharedFloats(args.partials);
  for (uint e0 = 0u; e0 <= experts; e0 += per_round) {
    if (chunks == 0u) break;
    uint e = e0 + t / chunks, c = t % chunks;
    float part = 0.0;
    if (t < per_round * chunks && e <= experts) {
      uint first_col = 8u * (first_chunk + c);
      vec4 lo = vec4(0.0), hi = vec4(0.0);
      if (e < experts) {
        uvec4 a = route_a, b = route_b;
        if (e0 > 0u) load_raw8_as(router_encoding, args.router, args.router_scales, e * args.hidden + first_col, a, b);
        decode_raw8_as(router_encoding, a, b, e * args.hidden + first_col, lo, hi);
      }
      [[unroll]] for (uint j = 0u; j < 8u; ++j) {
        uint d = first_col + j;
        float v = d >= d0 && d < d0 + n ? new_rows[d - d0] : 0.0;
        float w = e < experts ? (j < 4u ? lo[j] : hi[j - 4u]) * FloatsIn(args.norm).v[min(d, args.hidden - 1u)] : v;
        part += w * v;
      }
    }
    route_parts[t] = part;
    barrier();
    if (t < per_round && e0 + t <= experts) {
      float sum = 0.0;
      for (uint i = 0u; i < chunks; ++i) sum += route_parts[t * chunks + i];
      partials.v[group * (experts + 1u) + e0 + t] = sum;
    }
    barrier();
  }
  if (!arrive_last(args.counters, 0u, groups)) return;

  // The last workgroup: every sum over the workgroups in their order, a subgroup per entry.
  for (uint e = gl_SubgroupID; e <= experts; e += gl_NumSubgroups) {
    float sum = 0.0;
    for (uint g = gl_SubgroupInvocationID; g < groups; g += gl_SubgroupSize) sum += partials.v[g * (experts + 1u) + e];
    sum = subgroupAdd(sum);
    if (subgroupElect()) {
      if (e < experts) logits[e] = sum;
      else squares_total = sum;
    }
  }
  barrier();
  float inv_rms = 1.0 / sqrt(squares_total / float(args.hidden) + args.eps);
  for (uint e = t; e < experts; e += MATVEC_WORKGROUP_SIZE) logits[e] = logits[e] * inv_rms + FloatsIn(args.router_bias).v[e];
  SharedFloats residual = SharedFloats(args.residual);
  for (uint d = t; d < args.hidden; d += MATVEC_WORKGROUP_SIZE)
    Floats(args.xn).v[d] = residual.v[d] * inv_rms * FloatsIn(args.norm).v[d];
  select_experts(0u, experts, k, args.chosen, args.gate_weights, MATVEC_WORKGROUP_SIZE);
}

#version 450
#extension GL_GOOGLE_include_directive : require
// Decode: the attention-out product and the MoE router in one dispatch (the router alone cost a
// dispatch of ~13 us per layer on the H100, nearly all of it launch, barriers and latency).
//
// residual[r] += W[r] . x + bias[r] as matvec.comp (matvec.glsl), and xn[r] = residual[r] *
// norm[r]. Each workgroup, holding rows d0 .. d0 + n - 1 of the new residual, adds their share of
// every router logit, sum_d R[e, d] * xn[d], and of the sum of squares to partials[e, group] (e =
// experts: the squares), the router's rows and the norm read while the out product's loads are in
// flight. The last workgroup to finish sums the partials in a fixed order (the result does not
// depend on which finished last) with every load in flight at once, writes the RMS factor to
// xn[hidden] (expert_mlp1 scales its products by it, as router.comp applies it to each logit),
// and ranks logits = sum * inv_rms + router_bias (router_select.glsl). What the tail does not
// touch: the residual (no second read of it).
#include "common.glsl"
#include "matvec.glsl"
#include "router_select.glsl"
layout(push_constant) uniform Push { MatvecRouteArgs args; };

// A workgroup's rows: subgroups (of 4 lanes at least) times rows per subgroup.
const uint kMaxGroupRows = MATVEC_WORKGROUP_SIZE / 4u * MATVEC_MAX_ROWS;
shared float new_rows[kMaxGroupRows];  // residual * norm
shared float route_parts[MATVEC_WORKGROUP_SIZE];
shared float squares_total;

// The tail's loads: per pass, kTailEntries entries of a subgroup times kTailLoads loads a lane.
const uint kTailEntries = 4u, kTailLoads = 8u;

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
  // Issued now, used after the product: the first round's router rows, this subgroup's rows'
  // norm and bias.
  uvec4 route_a = uvec4(0u), route_b = uvec4(0u);
  uint e_first = chunks > 0u ? t / chunks : 0u, c_first = chunks > 0u ? t % chunks : 0u;
  if (chunks > 0u && e_first < min(per_round, experts))
    load_raw8_as(router_encoding, args.router, args.router_scales, e_first * args.hidden + 8u * (first_chunk + c_first),
                 route_a, route_b);
  // (A lane's chunk is the same in every round: its norm values too.)
  vec4 n_lo = vec4(0.0), n_hi = vec4(0.0);
  if (chunks > 0u) {
    uint first_col = 8u * (first_chunk + c_first);
    n_lo = Vec4sIn(args.norm).v[first_col / 4u];
    n_hi = Vec4sIn(args.norm).v[first_col / 4u + 1u];
  }
  float router_bias = t < experts ? FloatsIn(args.router_bias).v[t] : 0.0;  // for the last workgroup
  float row_norm[ROWS_PER_SUBGROUP], row_bias[ROWS_PER_SUBGROUP];
  [[unroll]] for (uint r = 0u; r < ROWS_PER_SUBGROUP; ++r) {
    row_norm[r] = FloatsIn(args.norm).v[min(row0 + r, args.hidden - 1u)];
    row_bias[r] = FloatsIn(args.bias).v[min(row0 + r, args.hidden - 1u)];
  }
  matvec_stage(args.x, uvec2(0u), args.cols, false, args.eps);
  if (has_rows) {
    matvec_dot(args.weight, args.scales, args.hidden, args.cols, row0);
    Floats residual = Floats(args.residual);
    [[unroll]] for (uint r = 0u; r < ROWS_PER_SUBGROUP; ++r) {
      float total = subgroupAdd(row_sums[r]);
      uint row = row0 + r;
      if (subgroupElect() && row < args.hidden) {
        float v = residual.v[row] + total + row_bias[r];
        residual.v[row] = v;
        new_rows[row - d0] = v;
        Floats(args.xn).v[row] = v * row_norm[r];
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
      if (e < experts) {
        uvec4 a = route_a, b = route_b;
        vec4 lo, hi;
        if (e0 > 0u) load_raw8_as(router_encoding, args.router, args.router_scales, e * args.hidden + first_col, a, b);
        decode_raw8_as(router_encoding, a, b, e * args.hidden + first_col, lo, hi);
        [[unroll]] for (uint j = 0u; j < 8u; ++j) {
          uint d = first_col + j;
          float v = d >= d0 && d < d0 + n ? new_rows[d - d0] : 0.0;
          part += (j < 4u ? lo[j] * n_lo[j] : hi[j - 4u] * n_hi[j - 4u]) * v;
        }
      } else {
        [[unroll]] for (uint j = 0u; j < 8u; ++j) {
          uint d = first_col + j;
          float v = d >= d0 && d < d0 + n ? new_rows[d - d0] : 0.0;
          part += v * v;
        }
      }
    }
    route_parts[t] = part;
    barrier();
    if (t < per_round && e0 + t <= experts) {
      float sum = 0.0;
      for (uint i = 0u; i < chunks; ++i) sum += route_parts[t * chunks + i];
      partials.v[(e0 + t) * groups + group] = sum;
    }
    barrier();
  }
  if (!arrive_last(args.counters, 0u, groups)) return;

  // The last workgroup: each entry's sum over the workgroups by one subgroup, kTailEntries
  // entries' loads in flight at once.
  uint entries = experts + 1u, sg = gl_SubgroupID, subgroups = gl_NumSubgroups, lane = gl_SubgroupInvocationID;
  for (uint j0 = 0u; sg + j0 * subgroups < entries; j0 += kTailEntries) {
    float acc[kTailEntries];
    [[unroll]] for (uint j = 0u; j < kTailEntries; ++j) acc[j] = 0.0;
    for (uint g0 = 0u; g0 < groups; g0 += kTailLoads * gl_SubgroupSize) {
      float v[kTailEntries][kTailLoads];
      [[unroll]] for (uint j = 0u; j < kTailEntries; ++j)
        [[unroll]] for (uint u = 0u; u < kTailLoads; ++u) {
          uint e = sg + (j0 + j) * subgroups, g = g0 + u * gl_SubgroupSize + lane;
          v[j][u] = e < entries && g < groups ? partials.v[e * groups + g] : 0.0;
        }
      [[unroll]] for (uint j = 0u; j < kTailEntries; ++j)
        [[unroll]] for (uint u = 0u; u < kTailLoads; ++u) acc[j] += v[j][u];
    }
    [[unroll]] for (uint j = 0u; j < kTailEntries; ++j) {
      uint e = sg + (j0 + j) * subgroups;
      float sum = subgroupAdd(acc[j]);
      if (subgroupElect() && e < entries) {
        if (e < experts) logits[e] = sum;
        else squares_total = sum;
      }
    }
  }
  barrier();
  float inv_rms = 1.0 / sqrt(squares_total / float(args.hidden) + args.eps);
  for (uint e = t; e < experts; e += MATVEC_WORKGROUP_SIZE)
    logits[e] = logits[e] * inv_rms + (e == t ? router_bias : FloatsIn(args.router_bias).v[e]);
  if (t == 0u) Floats(args.xn).v[args.hidden] = inv_rms;
  select_experts(0u, experts, k, args.chosen, args.gate_weights, MATVEC_WORKGROUP_SIZE);
}

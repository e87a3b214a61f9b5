#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_quad : require
// Decode, down projection of the chosen experts (MXFP4 in place), added to the residual:
// residual[d] += sum over the experts in increasing id of w_e * (W2_e[d] . act_e + b2_e[d]), the
// CPU engine's order. Workgroup (x, slot) computes WORKGROUP_SIZE / 4 outputs d of group x for
// expert chosen[slot], one quad of lanes per output (every 4th block per lane, two per pass), into
// partials [k, hidden]; the last slot of group x to finish adds the k results up in expert order.
#include "common.glsl"
layout(local_size_x = WORKGROUP_SIZE) in;
layout(push_constant) uniform Push { ExpertMlp2Args args; };

shared uint order[kMaxExpertsPerToken];  // slots by increasing expert id

float block_dot(uint block, uint act_base) {
  uvec4 q = QuadsIn(args.blocks).v[block];
  vec4 lo, hi;
  float sum = 0.0;
  fp4x8(q.x, lo, hi);
  sum += dot(lo, Vec4sIn(args.act).v[act_base]) + dot(hi, Vec4sIn(args.act).v[act_base + 1u]);
  fp4x8(q.y, lo, hi);
  sum += dot(lo, Vec4sIn(args.act).v[act_base + 2u]) + dot(hi, Vec4sIn(args.act).v[act_base + 3u]);
  fp4x8(q.z, lo, hi);
  sum += dot(lo, Vec4sIn(args.act).v[act_base + 4u]) + dot(hi, Vec4sIn(args.act).v[act_base + 5u]);
  fp4x8(q.w, lo, hi);
  sum += dot(lo, Vec4sIn(args.act).v[act_base + 6u]) + dot(hi, Vec4sIn(args.act).v[act_base + 7u]);
  return sum * mxfp4_scale(args.scales, block);
}

void main() {
  load_fp4_table();
  uint slot = gl_WorkGroupID.y;
  uint group_outputs = WORKGROUP_SIZE / EXPERT_LANES_PER_OUTPUT;
  uint lane = gl_LocalInvocationIndex % EXPERT_LANES_PER_OUTPUT;
  uint d = gl_WorkGroupID.x * group_outputs + gl_LocalInvocationIndex / EXPERT_LANES_PER_OUTPUT;
  bool in_range = d < args.hidden;
  uint blocks = args.intermediate / 32u;
  uint expert = WordsIn(args.chosen).v[slot];
  uint row = expert * args.hidden + (in_range ? d : 0u);
  uint act_base = (slot * args.intermediate) / 4u;
  float acc = 0.0;
  if (in_range) {
    uint b = lane;
    for (; b + EXPERT_LANES_PER_OUTPUT < blocks; b += 2u * EXPERT_LANES_PER_OUTPUT) {
      uint b2 = b + EXPERT_LANES_PER_OUTPUT;
      acc += block_dot(row * blocks + b, act_base + b * 8u) + block_dot(row * blocks + b2, act_base + b2 * 8u);
    }
    if (b < blocks) acc += block_dot(row * blocks + b, act_base + b * 8u);
  }
  acc += subgroupQuadSwapHorizontal(acc);
  acc += subgroupQuadSwapVertical(acc);
  if (in_range && lane == 0u) SharedFloats(args.partials).v[slot * args.hidden + d] = acc;
  if (!arrive_last(args.counters, gl_WorkGroupID.x, args.k)) return;
  if (gl_LocalInvocationIndex < args.k) {
    uint s = gl_LocalInvocationIndex;
    uint e = WordsIn(args.chosen).v[s];
    uint rank = 0u;
    for (uint o = 0u; o < args.k; ++o) {
      uint other = WordsIn(args.chosen).v[o];
      if (other < e || (other == e && o < s)) ++rank;
    }
    order[rank] = s;
  }
  barrier();
  uint first = gl_WorkGroupID.x * group_outputs;
  for (uint out_d = first + gl_LocalInvocationIndex; out_d < min(first + group_outputs, args.hidden); out_d += WORKGROUP_SIZE) {
    float sum = 0.0;
    for (uint n = 0u; n < args.k; ++n) {
      uint s = order[n];
      uint e = WordsIn(args.chosen).v[s];
      float down = SharedFloats(args.partials).v[s * args.hidden + out_d] + FloatsIn(args.bias).v[e * args.hidden + out_d];
      sum += FloatsIn(args.gate_weights).v[s] * down;
    }
    Floats(args.residual).v[out_d] += sum;
  }
}

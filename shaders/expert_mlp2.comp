#version 450
#extension GL_GOOGLE_include_directive : require
// Decode, down projection of the chosen experts (MXFP4 in place), added to the residual:
// residual[d] += sum over the experts in increasing id of w_e * (W2_e[d] . act_e + b2_e[d]), the
// CPU engine's order. Workgroup (x, slot) computes outputs d of group x for expert chosen[slot],
// EXPERT_OUTPUTS per subgroup, from act[slot] staged once (expert_decode.glsl), into partials
// [k, hidden]; the last slot of group x to finish adds the k results up in expert order.
#include "common.glsl"
#define EXPERT_ROWS EXPERT_OUTPUTS
#include "expert_decode.glsl"
layout(push_constant) uniform Push { ExpertMlp2Args args; };

shared uint order[kMaxExpertsPerToken];  // slots by increasing expert id
shared float slot_weight[kMaxExpertsPerToken];

void main() {
  uint slot = gl_WorkGroupID.y;
  uint group_outputs = gl_NumSubgroups * EXPERT_OUTPUTS;
  uint d0 = (gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID) * EXPERT_OUTPUTS;
  uint outputs = d0 < args.hidden ? min(EXPERT_OUTPUTS, args.hidden - d0) : 0u;
  uint expert = WordsIn(args.chosen).v[slot];
  expert_rows_dot(args.blocks, args.scales, args.act, slot * args.intermediate, args.intermediate,
                  expert * args.hidden + d0, outputs);
  [[unroll]] for (uint o = 0u; o < EXPERT_OUTPUTS; ++o) {
    float total = subgroupAdd(expert_acc[o]);
    if (subgroupElect() && o < outputs) SharedFloats(args.partials).v[slot * args.hidden + d0 + o] = total;
  }
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
    slot_weight[s] = FloatsIn(args.gate_weights).v[s];
  }
  barrier();
  uint first = gl_WorkGroupID.x * group_outputs;
  for (uint d = first + gl_LocalInvocationIndex; d < min(first + group_outputs, args.hidden); d += EXPERT_WORKGROUP_SIZE) {
    float sum = 0.0;
    for (uint n = 0u; n < args.k; ++n) {
      uint s = order[n];
      uint e = WordsIn(args.chosen).v[s];
      float down = SharedFloats(args.partials).v[s * args.hidden + d] + FloatsIn(args.bias).v[e * args.hidden + d];
      sum += slot_weight[s] * down;
    }
    Floats(args.residual).v[d] += sum;
  }
}

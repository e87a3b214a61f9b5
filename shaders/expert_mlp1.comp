#version 450
#extension GL_GOOGLE_include_directive : require
// Decode, first expert projection with SwiGLU, MXFP4 read in place. The k chosen experts' outputs
// are numbered (slot, group of EXPERT_OUTPUTS outputs), slot-major, one per subgroup: output j of
// slot s comes from rows 2j (gate) and 2j+1 (up) of the mlp1 of the expert with the s-th largest
// router logit (ranked by every workgroup, the first writing chosen and gate_weights for mlp2:
// expert_ranking.glsl), plus bias; then
// act[s, j] = (clamp(up, -limit, limit) + 1) * gate * sigmoid(1.702 gate), gate = min(gate, limit).
// Every subgroup of a workgroup reads the same input x, staged once (expert_decode.glsl).
#include "common.glsl"
#include "expert_ranking.glsl"
#define EXPERT_ROWS (2u * EXPERT_OUTPUTS)
#include "expert_decode.glsl"
layout(push_constant) uniform Push { ExpertMlp1Args args; };

void main() {
  uint groups_per_slot = (args.intermediate + EXPERT_OUTPUTS - 1u) / EXPERT_OUTPUTS;
  uint item = gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID;
  uint slot = item / groups_per_slot;
  uint j0 = (item % groups_per_slot) * EXPERT_OUTPUTS;
  bool has_work = slot < args.k;
  load_ranked_logits(args.logits, args.experts, args.k, EXPERT_WORKGROUP_SIZE);
  uint expert = has_work ? ranked[slot] : 0u;
  if (gl_WorkGroupID.x == 0u && gl_LocalInvocationIndex < args.k) {  // the choices, for mlp2
    uint s = gl_LocalInvocationIndex;
    Words(args.chosen).v[s] = ranked[s];
    Floats(args.gate_weights).v[s] = ranked_weight(s, args.k);
  }
  uint first_row = expert * 2u * args.intermediate + 2u * j0;
  uint rows = has_work ? min(EXPERT_ROWS, 2u * (args.intermediate - j0)) : 0u;
  expert_rows_dot(args.blocks, args.scales, args.x, 0u, args.hidden, first_row, rows);
  if (!has_work) return;
  [[unroll]] for (uint r = 0u; r < EXPERT_ROWS; ++r) expert_acc[r] = subgroupAdd(expert_acc[r]);
  if (subgroupElect()) {
    [[unroll]] for (uint o = 0u; o < EXPERT_OUTPUTS; ++o) {
      uint j = j0 + o;
      if (j >= args.intermediate) break;
      uint row = first_row + 2u * o;
      float gate = min(expert_acc[2u * o] + FloatsIn(args.bias).v[row], args.limit);
      float up = clamp(expert_acc[2u * o + 1u] + FloatsIn(args.bias).v[row + 1u], -args.limit, args.limit);
      float glu = gate / (1.0 + exp(-1.702 * gate));
      Floats(args.act).v[slot * args.intermediate + j] = (up + 1.0) * glu;
    }
  }
}

// Decode, first expert projection with SwiGLU, MXFP4 read in place. The k chosen experts' outputs
// are numbered (slot, group of EXPERT_OUTPUTS outputs), slot-major, one item per subgroup: output j
// of slot s comes from rows 2j (gate) and 2j+1 (up) of the mlp1 of the expert with the s-th largest
// router logit (ranked by every workgroup, the first writing chosen and gate_weights for mlp2:
// expert_ranking.glsl), plus bias; then
// act[s, j] = (clamp(up, -limit, limit) + 1) * gate * sigmoid(1.702 gate), gate = min(gate, limit).
// Every subgroup of a workgroup reads the same input x, staged once (expert_decode.glsl).
// Two kernels share these parts: expert_mlp1.comp (a workgroup per gl_NumSubgroups items) and
// expert_mlp1_loop.comp (fewer workgroups, each looping over items: the ranking and the staging
// once per workgroup).
#include "common.glsl"
#include "expert_ranking.glsl"
#define EXPERT_ROWS (2u * EXPERT_OUTPUTS)
#include "expert_decode.glsl"
layout(push_constant) uniform Push { ExpertMlp1Args args; };

uint groups_per_slot() { return (args.intermediate + EXPERT_OUTPUTS - 1u) / EXPERT_OUTPUTS; }
uint items() { return args.k * groups_per_slot(); }
uint slot_of(uint item) { return item / groups_per_slot(); }
uint first_output_of(uint item) { return (item % groups_per_slot()) * EXPERT_OUTPUTS; }
// Item's first weight row and its rows (0 past the last item). After the ranking.
uint first_row_of(uint item) {
  return (item < items() ? ranked[slot_of(item)] : 0u) * 2u * args.intermediate + 2u * first_output_of(item);
}
uint rows_of(uint item) { return item < items() ? min(EXPERT_ROWS, 2u * (args.intermediate - first_output_of(item))) : 0u; }

// The logits ranked (every invocation calls it); the first workgroup writes the choices for mlp2.
void rank_and_publish() {
  load_ranked_logits(args.logits, args.experts, args.k, EXPERT_WORKGROUP_SIZE);
  if (gl_WorkGroupID.x == 0u && gl_LocalInvocationIndex < args.k) {
    uint s = gl_LocalInvocationIndex;
    Words(args.chosen).v[s] = ranked[s];
    Floats(args.gate_weights).v[s] = ranked_weight(s, args.k);
  }
}

// expert_acc of `item` (a real one) reduced over the subgroup, biased, through SwiGLU into act.
void write_activations(uint item) {
  uint slot = slot_of(item), j0 = first_output_of(item), first_row = first_row_of(item);
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

#version 450
#extension GL_GOOGLE_include_directive : require
// Decode, down projection of the chosen experts (MXFP4 in place), added to the residual:
// residual[d] += sum over the experts in increasing id of w_e * (W2_e[d] . act_e + b2_e[d]), the
// CPU engine's order. Each subgroup owns EXPERT_OUTPUTS_PER_SUBGROUP outputs d and reads, per
// expert, their rows with one 16-byte load per lane per block.
#include "common.glsl"
layout(local_size_x = WORKGROUP_SIZE) in;
layout(push_constant) uniform Push { ExpertMlp2Args args; };

void main() {
  load_fp4_table();
  uint d0 = (gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID) * EXPERT_OUTPUTS_PER_SUBGROUP;
  if (d0 >= args.hidden) return;
  uint outputs = min(EXPERT_OUTPUTS_PER_SUBGROUP, args.hidden - d0);
  uint blocks = args.intermediate / 32u;
  float dots[kMaxExpertsPerToken * EXPERT_OUTPUTS_PER_SUBGROUP];
  for (uint slot = 0u; slot < args.k; ++slot) {
    uint expert = WordsIn(args.chosen).v[slot];
    float acc[EXPERT_OUTPUTS_PER_SUBGROUP];
    [[unroll]] for (uint o = 0u; o < EXPERT_OUTPUTS_PER_SUBGROUP; ++o) acc[o] = 0.0;
    for (uint b = gl_SubgroupInvocationID; b < blocks; b += gl_SubgroupSize) {
      vec4 x[8];
      uint act_base = (slot * args.intermediate) / 4u + b * 8u;
      [[unroll]] for (uint i = 0u; i < 8u; ++i) x[i] = Vec4sIn(args.act).v[act_base + i];
      [[unroll]] for (uint o = 0u; o < EXPERT_OUTPUTS_PER_SUBGROUP; ++o) {
        if (o >= outputs) break;
        uint block = (expert * args.hidden + d0 + o) * blocks + b;
        uvec4 q = QuadsIn(args.blocks).v[block];
        vec4 lo, hi;
        float sum = 0.0;
        fp4x8(q.x, lo, hi);
        sum += dot(lo, x[0]) + dot(hi, x[1]);
        fp4x8(q.y, lo, hi);
        sum += dot(lo, x[2]) + dot(hi, x[3]);
        fp4x8(q.z, lo, hi);
        sum += dot(lo, x[4]) + dot(hi, x[5]);
        fp4x8(q.w, lo, hi);
        sum += dot(lo, x[6]) + dot(hi, x[7]);
        acc[o] += sum * mxfp4_scale(args.scales, block);
      }
    }
    [[unroll]] for (uint o = 0u; o < EXPERT_OUTPUTS_PER_SUBGROUP; ++o) dots[slot * EXPERT_OUTPUTS_PER_SUBGROUP + o] = subgroupAdd(acc[o]);
  }
  if (subgroupElect()) {
    for (uint o = 0u; o < outputs; ++o) {
      uint d = d0 + o;
      float sum = 0.0;
      uint previous = 0u;
      for (uint n = 0u; n < args.k; ++n) {  // slots by increasing expert id
        uint best = kMaxExpertsPerToken;
        uint best_expert = 0u;
        for (uint slot = 0u; slot < args.k; ++slot) {
          uint e = WordsIn(args.chosen).v[slot];
          if ((n == 0u || e > previous) && (best == kMaxExpertsPerToken || e < best_expert)) {
            best = slot;
            best_expert = e;
          }
        }
        previous = best_expert;
        float down = dots[best * EXPERT_OUTPUTS_PER_SUBGROUP + o] + FloatsIn(args.bias).v[best_expert * args.hidden + d];
        sum += FloatsIn(args.gate_weights).v[best] * down;
      }
      Floats(args.residual).v[d] += sum;
    }
  }
}

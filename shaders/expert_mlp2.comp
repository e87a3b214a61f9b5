#version 450
#extension GL_GOOGLE_include_directive : require
// Decode, down projection of the chosen experts (MXFP4 in place), added to the residual:
// residual[d] += sum over the experts in increasing id of w_e * (W2_e[d] . act_e + b2_e[d]), the
// CPU engine's order. Workgroup (x, slot) computes the outputs of group x for expert chosen[slot]
// (MLP2_OUTPUTS_PER_SUBGROUP per subgroup, one 16-byte load per lane per row and block) into
// partials [k, hidden]; the last slot of group x to finish adds the k results up in expert order.
#include "common.glsl"
layout(local_size_x = WORKGROUP_SIZE) in;
layout(push_constant) uniform Push { ExpertMlp2Args args; };

shared uint order[kMaxExpertsPerToken];  // slots by increasing expert id

void main() {
  load_fp4_table();
  uint slot = gl_WorkGroupID.y;
  uint group_outputs = gl_NumSubgroups * MLP2_OUTPUTS_PER_SUBGROUP;
  uint d0 = (gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID) * MLP2_OUTPUTS_PER_SUBGROUP;
  uint outputs = d0 < args.hidden ? min(MLP2_OUTPUTS_PER_SUBGROUP, args.hidden - d0) : 0u;
  uint blocks = args.intermediate / 32u;
  uint expert = WordsIn(args.chosen).v[slot];
  float acc[MLP2_OUTPUTS_PER_SUBGROUP];
  [[unroll]] for (uint o = 0u; o < MLP2_OUTPUTS_PER_SUBGROUP; ++o) acc[o] = 0.0;
  if (outputs > 0u) {
    for (uint b = gl_SubgroupInvocationID; b < blocks; b += gl_SubgroupSize) {
      vec4 x[8];
      uint act_base = (slot * args.intermediate) / 4u + b * 8u;
      [[unroll]] for (uint i = 0u; i < 8u; ++i) x[i] = Vec4sIn(args.act).v[act_base + i];
      [[unroll]] for (uint o = 0u; o < MLP2_OUTPUTS_PER_SUBGROUP; ++o) {
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
  }
  [[unroll]] for (uint o = 0u; o < MLP2_OUTPUTS_PER_SUBGROUP; ++o) {
    float total = subgroupAdd(acc[o]);
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
  }
  barrier();
  uint first = gl_WorkGroupID.x * group_outputs;
  for (uint d = first + gl_LocalInvocationIndex; d < min(first + group_outputs, args.hidden); d += WORKGROUP_SIZE) {
    float sum = 0.0;
    for (uint n = 0u; n < args.k; ++n) {
      uint s = order[n];
      uint e = WordsIn(args.chosen).v[s];
      float down = SharedFloats(args.partials).v[s * args.hidden + d] + FloatsIn(args.bias).v[e * args.hidden + d];
      sum += FloatsIn(args.gate_weights).v[s] * down;
    }
    Floats(args.residual).v[d] += sum;
  }
}

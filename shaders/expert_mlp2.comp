#version 450
#extension GL_GOOGLE_include_directive : require
// Decode, down projection of the chosen experts (MXFP4 in place), added to the residual:
// residual[d] += sum over the experts in increasing id of w_e * (W2_e[d] . act_e + b2_e[d]), the
// CPU engine's order. Workgroup (x, slot) computes outputs d of group x for expert chosen[slot],
// EXPERT_OUTPUTS per subgroup (lane l takes blocks l, l + 32, ..., loading
// EXPERT_BATCH of every row before using any), into partials [k, hidden]; the last slot of
// group x to finish adds the k results up in expert order.
#include "common.glsl"
layout(local_size_x = WORKGROUP_SIZE) in;
layout(constant_id = SPEC_EXPERT_OUTPUTS) const uint EXPERT_OUTPUTS = 2u;
layout(constant_id = SPEC_EXPERT_BATCH) const uint EXPERT_BATCH = 4u;
layout(push_constant) uniform Push { ExpertMlp2Args args; };

shared uint order[kMaxExpertsPerToken];  // slots by increasing expert id

void main() {
  load_fp4_table();
  uint slot = gl_WorkGroupID.y;
  uint group_outputs = gl_NumSubgroups * EXPERT_OUTPUTS;
  uint d0 = (gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID) * EXPERT_OUTPUTS;
  uint outputs = d0 < args.hidden ? min(EXPERT_OUTPUTS, args.hidden - d0) : 0u;
  uint blocks = args.intermediate / 32u;
  uint expert = WordsIn(args.chosen).v[slot];
  uint act_base = (slot * args.intermediate) / 4u;
  float acc[EXPERT_OUTPUTS];
  [[unroll]] for (uint o = 0u; o < EXPERT_OUTPUTS; ++o) acc[o] = 0.0;
  uint step = gl_SubgroupSize;
  for (uint b0 = gl_SubgroupInvocationID; b0 < blocks && outputs > 0u; b0 += EXPERT_BATCH * step) {
    uvec4 q[EXPERT_BATCH][EXPERT_OUTPUTS];
    float scale[EXPERT_BATCH][EXPERT_OUTPUTS];
    [[unroll]] for (uint u = 0u; u < EXPERT_BATCH; ++u)
      [[unroll]] for (uint o = 0u; o < EXPERT_OUTPUTS; ++o) {
        uint b = b0 + u * step;
        bool here = b < blocks && o < outputs;
        uint block = (expert * args.hidden + d0 + o) * blocks + (here ? b : 0u);
        q[u][o] = here ? QuadsIn(args.blocks).v[block] : uvec4(0u);
        scale[u][o] = here ? mxfp4_scale(args.scales, block) : 0.0;
      }
    [[unroll]] for (uint u = 0u; u < EXPERT_BATCH; ++u) {
      uint b = b0 + u * step;
      if (b >= blocks) break;
      vec4 x[8];
      [[unroll]] for (uint i = 0u; i < 8u; ++i) x[i] = Vec4sIn(args.act).v[act_base + b * 8u + i];
      [[unroll]] for (uint o = 0u; o < EXPERT_OUTPUTS; ++o) {
        vec4 lo, hi;
        float sum = 0.0;
        fp4x8(q[u][o].x, lo, hi);
        sum += dot(lo, x[0]) + dot(hi, x[1]);
        fp4x8(q[u][o].y, lo, hi);
        sum += dot(lo, x[2]) + dot(hi, x[3]);
        fp4x8(q[u][o].z, lo, hi);
        sum += dot(lo, x[4]) + dot(hi, x[5]);
        fp4x8(q[u][o].w, lo, hi);
        sum += dot(lo, x[6]) + dot(hi, x[7]);
        acc[o] += sum * scale[u][o];
      }
    }
  }
  [[unroll]] for (uint o = 0u; o < EXPERT_OUTPUTS; ++o) {
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

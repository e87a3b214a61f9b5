#version 450
#extension GL_GOOGLE_include_directive : require
// Prefill: the experts' outputs of token t (one workgroup each) added to its residual:
// x[t] += sum over t's experts in increasing id of gate weight * y[row_of[t, s]] (y holds
// W2 act + bias), the CPU engine's order, so the result does not depend on how rows were grouped.
#include "common.glsl"
layout(local_size_x = WORKGROUP_SIZE) in;
layout(push_constant) uniform Push { MoeCombineArgs args; };

shared uint order[kMaxExpertsPerToken];  // slots by increasing expert id

void main() {
  uint t = gl_WorkGroupID.x;
  uint k = args.k;
  if (gl_LocalInvocationIndex < k) {
    uint slot = gl_LocalInvocationIndex;
    uint e = WordsIn(args.chosen).v[t * k + slot];
    uint rank = 0u;
    for (uint o = 0u; o < k; ++o) {
      uint other = WordsIn(args.chosen).v[t * k + o];
      if (other < e || (other == e && o < slot)) ++rank;
    }
    order[rank] = slot;
  }
  barrier();
  for (uint d = gl_LocalInvocationIndex; d < args.hidden; d += WORKGROUP_SIZE) {
    float sum = 0.0;
    for (uint n = 0u; n < k; ++n) {
      uint slot = order[n];
      uint row = WordsIn(args.row_of).v[t * k + slot];
      sum += FloatsIn(args.gate_weights).v[t * k + slot] * FloatsIn(args.y).v[row * args.hidden + d];
    }
    Floats(args.x).v[t * args.hidden + d] += sum;
  }
}

#version 450
#extension GL_GOOGLE_include_directive : require
// Prefill: the experts' outputs of token t (one workgroup each) added to its residual:
// x[t] += sum over t's experts in increasing id of gate weight * y[row_of[t, s]] (y holds
// W2 act + bias), the CPU engine's order, so the result does not depend on how rows were grouped.
#include "common.glsl"
layout(local_size_x = WORKGROUP_SIZE) in;
layout(push_constant) uniform Push { MoeCombineArgs args; };

// Row and gate weight of t's experts by increasing expert id, read once per workgroup.
shared uint rows[kMaxExpertsPerToken];
shared float gates[kMaxExpertsPerToken];

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
    rows[rank] = WordsIn(args.row_of).v[t * k + slot];
    gates[rank] = FloatsIn(args.gate_weights).v[t * k + slot];
  }
  barrier();
  // Four values a lane at a time (hidden % 4 == 0: the launcher), each summed as one would be.
  uint quads = args.hidden / 4u;
  for (uint d = gl_LocalInvocationIndex; d < quads; d += WORKGROUP_SIZE) {
    vec4 sum = vec4(0.0);
    for (uint n = 0u; n < k; ++n) sum += gates[n] * Vec4sIn(args.y).v[rows[n] * quads + d];
    Vec4s(args.x).v[t * quads + d] += sum;
  }
}

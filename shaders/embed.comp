#version 450
#extension GL_GOOGLE_include_directive : require
// x[t] = row tokens[t] of the embedding table, decoded from its stored encoding (ENCODING), for
// t < count; each invocation writes 8 values.
#include "common.glsl"
layout(local_size_x = WORKGROUP_SIZE) in;
layout(push_constant) uniform Push { EmbedArgs args; };

void main() {
  uint t = gl_WorkGroupID.y;
  uint chunk = gl_GlobalInvocationID.x;
  if (t >= args.count || chunk * 8u >= args.hidden) return;
  uint token = WordsIn(args.tokens).v[t];
  vec4 lo, hi;
  load8(args.table, args.table_scales, token * args.hidden + chunk * 8u, lo, hi);
  uint first = (t * args.hidden + chunk * 8u) >> 2;
  Vec4s(args.x).v[first] = lo;
  Vec4s(args.x).v[first + 1u] = hi;
}

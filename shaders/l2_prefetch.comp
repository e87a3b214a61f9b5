#version 450
#extension GL_GOOGLE_include_directive : require
// L2 prefetch (PrefetchArgs): every invocation loads PREFETCH_QUADS 16-byte words per round, all
// in flight at once, over a grid-stride loop. Nothing is kept: the XOR of the words is written to
// sink only if it equals args.never, which the launcher makes unreachable in practice; the
// condition keeps the compiler from dropping the loads.
#include "common.glsl"
layout(local_size_x = PREFETCH_WORKGROUP_SIZE) in;
layout(push_constant) uniform Push { PrefetchArgs args; };

void main() {
  uint stride = gl_NumWorkGroups.x * PREFETCH_WORKGROUP_SIZE * PREFETCH_QUADS;
  uvec4 mixed = uvec4(0u);
  for (uint at = gl_WorkGroupID.x * PREFETCH_WORKGROUP_SIZE * PREFETCH_QUADS + gl_LocalInvocationIndex;
       at < args.quads; at += stride) {
    uvec4 q[PREFETCH_QUADS];
    [[unroll]] for (uint u = 0u; u < PREFETCH_QUADS; ++u)
      q[u] = QuadsIn(args.source).v[min(at + u * PREFETCH_WORKGROUP_SIZE, args.quads - 1u)];
    [[unroll]] for (uint u = 0u; u < PREFETCH_QUADS; ++u) mixed ^= q[u];
  }
  uint word = mixed.x ^ mixed.y ^ mixed.z ^ mixed.w;
  if (word == args.never && args.never != 0u) Words(args.sink).v[0] = word;
}

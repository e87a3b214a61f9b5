#version 450
#extension GL_GOOGLE_include_directive : require
// Brings a full layer's cached keys and values (slots 0 .. position - 1) into the L2 cache while
// the layer's QKV product runs beside it (the engine records no barrier between the two), so decode
// attention, which cannot start before that product, finds them there instead of reading them from
// memory in its own short wave. Every invocation loads its uvec4s, eight at a time; what it loads
// only decides a write that no real cache contents make (so the loads are not removed).
#include "common.glsl"
layout(local_size_x = 256) in;
layout(push_constant) uniform Push { KvPrefetchArgs args; };

void main() {
  uint position = WordsIn(args.step).v[0];
  uint head_quads = position * args.row_bytes / 16u;  // a KV head's bytes of the keys before the position
  uint total = args.kv_heads * head_quads;
  uint stride = gl_NumWorkGroups.x * 256u;
  uint seen = 0u;
  for (uint i0 = gl_GlobalInvocationID.x; i0 < total; i0 += 8u * stride) {
    uvec4 k[8], v[8];
    [[unroll]] for (uint u = 0u; u < 8u; ++u) {
      uint i = min(i0 + u * stride, total - 1u);
      uint at = (i / head_quads) * (args.slots * args.row_bytes / 16u) + i % head_quads;
      k[u] = QuadsIn(args.k_cache).v[at];
      v[u] = QuadsIn(args.v_cache).v[at];
    }
    [[unroll]] for (uint u = 0u; u < 8u; ++u) seen ^= k[u].x ^ v[u].w;
  }
  if (seen == 0x7FC00001u && position == 0xFFFFFFFFu) Words(args.sink).v[0] = seen;
}

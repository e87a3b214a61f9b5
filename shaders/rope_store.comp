#version 450
#extension GL_GOOGLE_include_directive : require
// Prefill: RoPE (half-split pairs, YaRN tables) of the Q rows of `count` new tokens in place and
// of their K rows on the way into the cache, plus V's copy into the cache; token t has position
// step.position + t and cache slot position % slots. Workgroup (x, t): invocations over the
// token's Q pairs, then its K pairs, then its V values.
#include "common.glsl"
layout(local_size_x = WORKGROUP_SIZE) in;
layout(push_constant) uniform Push { RopeStoreArgs args; };

void main() {
  uint t = gl_WorkGroupID.y;
  uint id = gl_GlobalInvocationID.x;
  uint D = args.head_dim, half_dim = D / 2u;
  uint q_pairs = args.heads * half_dim, k_pairs = args.kv_heads * half_dim, kv_rows = args.kv_heads * D;
  uint stride = (args.heads + 2u * args.kv_heads) * D;
  uint position = WordsIn(args.step).v[0] + t;
  uint slot = position % args.slots;
  Floats qkv = Floats(args.qkv);
  uint base = t * stride;
  if (id < q_pairs + k_pairs) {
    bool is_q = id < q_pairs;
    uint pair = is_q ? id : id - q_pairs;
    uint head = pair / half_dim, i = pair % half_dim;
    vec2 cs = rope_cos_sin(args.inv_freq, position, i, args.concentration);
    uint first = (is_q ? head : args.heads + head) * D + i;
    float a = qkv.v[base + first], b = qkv.v[base + first + half_dim];
    float ra = a * cs.x - b * cs.y, rb = b * cs.x + a * cs.y;
    if (is_q) {
      qkv.v[base + first] = ra;
      qkv.v[base + first + half_dim] = rb;
    } else {
      uint row = KV_CACHE_ROW(slot, head, args.slots, D);
      Floats(args.k_cache).v[row + i] = ra;
      Floats(args.k_cache).v[row + i + half_dim] = rb;
    }
  } else if (id < q_pairs + k_pairs + kv_rows) {
    uint i = id - q_pairs - k_pairs;
    Floats(args.v_cache).v[KV_CACHE_ROW(slot, i / D, args.slots, D) + i % D] = qkv.v[base + (args.heads + args.kv_heads) * D + i];
  }
}

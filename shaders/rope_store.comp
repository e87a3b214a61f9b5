#version 450
#extension GL_GOOGLE_include_directive : require
// Prefill: RoPE (half-split pairs, YaRN tables) of the Q rows of `count` new tokens in place and
// of their K rows on the way into the cache, plus V's copy into the cache; token t has cache
// position step.position + t, slot that % slots, and RoPE position its place in its sequence
// (StepState::sequence). The caches in ENCODING (f32 or f16, written
// a pair of dims at a time). Workgroup (x, t): invocations over the token's Q pairs (i, i + D/2),
// then its K pairs two at a time (i, i + 1 for even i: dims i, i + 1 and their partners i + D/2,
// i + 1 + D/2, each two a word of an f16 cache), then its V values two at a time.
#include "common.glsl"
layout(local_size_x = WORKGROUP_SIZE) in;
layout(push_constant) uniform Push { RopeStoreArgs args; };

// Pair i of head row `first` (the element index of dim 0) rotated: (dim i, dim i + D/2).
vec2 rotated(Floats qkv, uint first, uint i, uint half_dim, uint position) {
  vec2 cs = rope_cos_sin(args.rope, position, i, half_dim);
  float a = qkv.v[first + i], b = qkv.v[first + i + half_dim];
  return vec2(a * cs.x - b * cs.y, b * cs.x + a * cs.y);
}

void main() {
  uint t = gl_WorkGroupID.y;
  uint id = gl_GlobalInvocationID.x;
  uint D = args.head_dim, half_dim = D / 2u;
  uint q_pairs = args.heads * half_dim, k_pair_pairs = args.kv_heads * (half_dim / 2u), v_pairs = args.kv_heads * half_dim;
  uint stride = (args.heads + 2u * args.kv_heads) * D;
  uint slot = (WordsIn(args.step).v[0] + t) % args.slots;
  uint position = rope_position(WordsIn(args.step).v[0] + t, WordsIn(args.step).v[2]);
  Floats qkv = Floats(args.qkv);
  uint base = t * stride;
  if (id < q_pairs) {
    uint head = id / half_dim, i = id % half_dim;
    vec2 r = rotated(qkv, base + head * D, i, half_dim, position);
    qkv.v[base + head * D + i] = r.x;
    qkv.v[base + head * D + i + half_dim] = r.y;
  } else if (id < q_pairs + k_pair_pairs) {
    uint pair = id - q_pairs;
    uint head = pair / (half_dim / 2u), i = 2u * (pair % (half_dim / 2u));
    uint first = base + (args.heads + head) * D;
    vec2 r0 = rotated(qkv, first, i, half_dim, position), r1 = rotated(qkv, first, i + 1u, half_dim, position);
    uint row = KV_CACHE_ROW(slot, head, args.slots, D);
    store_kv_pair(args.k_cache, row, i, vec2(r0.x, r1.x));
    store_kv_pair(args.k_cache, row, i + half_dim, vec2(r0.y, r1.y));
  } else if (id < q_pairs + k_pair_pairs + v_pairs) {
    uint i = 2u * (id - q_pairs - k_pair_pairs);
    uint from = base + (args.heads + args.kv_heads) * D + i;
    store_kv_pair(args.v_cache, KV_CACHE_ROW(slot, i / D, args.slots, D), i % D, vec2(qkv.v[from], qkv.v[from + 1u]));
  }
}

#version 450
#extension GL_GOOGLE_include_directive : require
// Decode attention of the token at step.position on cooperative matrices (VK_NV_cooperative_matrix,
// 16 x 16 x 16 f16 -> f32), for layers that attend to every earlier key with an f16 cache and
// head_dim 64: one workgroup per (KV head g, key range s) with all GROUP (<= 16) query heads of g as
// the rows of one 16-row tile, so each key and value is loaded once per step and the heads'
// arithmetic runs on the matrix units instead of lengthening each invocation's chain.
//   S = Q K^T: Q rotated and split into f16 hi + lo (about f32), K tiles of 16 keys straight from
//   the cache (column-major B), f32 sums into shared memory;
//   the softmax per row over the pass (online across passes), P split into f16 hi + lo;
//   O += P V: V tiles of 16 keys x 16 dims straight from the cache, subgroup (dims tile, key half).
// The new token's key is not read from the cache (this dispatch stores it there): the range holding
// the position starts each row's softmax with it (score from its rotated K, value as the cache
// holds it) and its tiles stop before it. Key tiles run up to 15 keys past a range's end (their
// probabilities are 0): the engine zero-fills its caches and pads them by 16 rows, so those reads
// are of finite values inside the buffer. The ranges merge as in attention_decode.
#include "common.glsl"
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = DECODE_ATTENTION_SIZE) in;
layout(push_constant) uniform Push { AttentionDecodeArgs args; };
layout(constant_id = SPEC_ATTENTION_GROUP) const uint GROUP = 8u;       // query heads of a KV head
layout(constant_id = SPEC_ATTENTION_HEAD_DIM) const uint HEAD_DIM = 64u;  // 64 (the launcher checks)

const uint T = DECODE_ATTENTION_SIZE;  // 256 invocations: 8 subgroups of 32
const uint kPass = 256u;               // keys per pass
const uint kDim = 64u;
const uint kDimTiles = kDim / 16u;
const uint kQStride = kDim / 8u + 1u;   // uvec4s per Q row (8 halves each; one more: skewed banks)
const uint kSStride = kPass / 4u + 1u;  // uvec4s per S row (4 floats each)
const uint kPStride = kPass / 8u + 1u;  // uvec4s per P row
const uint kOStride = 16u / 4u + 1u;    // uvec4s per row of a subgroup's 16 x 16 output tile
const uint kGroupValues = GROUP * kDim;
const uint kOutputsPerInvocation = (kGroupValues + T - 1u) / T;

shared uvec4 q_hi[16u * kQStride], q_lo[16u * kQStride];
shared uvec4 s_tile[16u * kSStride];  // S [16, kPass] f32; then the subgroups' output tiles
shared uvec4 p_hi[16u * kPStride], p_lo[16u * kPStride];
shared float out_acc[kGroupValues];
shared float row_max[16], row_sum[16], row_rescale[16];
shared uint k_new_halves[kDim / 2u], v_new_halves[kDim / 2u];
shared float q_rows[16u * kDim];  // rotated f32 Q rows (for the new key's score)
shared float new_score[16];

#define MAT16 fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define ACC32 fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>

float s_at(uint r, uint k) { return uintBitsToFloat(s_tile[r * kSStride + (k >> 2)][k & 3u]); }
// hi: the f32 value truncated to f16's 11 significant bits (exact in f16), lo: the rest.
float hi_part(float v) { return uintBitsToFloat(floatBitsToUint(v) & 0xFFFFE000u); }

// This subgroup's tiles of the pass at key c0 (n keys): K tiles sg, sg + 8 (each as kDimTiles
// column-major 16 x 16 blocks) for S, and V tiles parity, parity + 2, ... of dims tile sg % 4 for
// P V. Loaded all at once, before they are used, so the workgroup waits on memory once per pass;
// tiles past the pass repeat its last (never used).
MAT16 k_tiles[2][kDimTiles], v_tiles[kPass / 32u];
void load_pass_tiles(uint row_quads_of_head, uint c0, uint n) {
  uint last = (n + 15u) / 16u - 1u, sg = gl_SubgroupID;
  [[unroll]] for (uint i = 0u; i < 2u; ++i) {
    uint at = row_quads_of_head + (c0 + 16u * min(sg + 8u * i, last)) * (kDim / 8u);
    [[unroll]] for (uint dt = 0u; dt < kDimTiles; ++dt)
      coopMatLoadNV(k_tiles[i][dt], QuadsIn(args.k_cache).v, at + dt * 2u, kDim / 8u, true);
  }
  uint dt = sg % kDimTiles, parity = sg / kDimTiles;
  [[unroll]] for (uint j = 0u; j < kPass / 32u; ++j) {
    uint at = row_quads_of_head + (c0 + 16u * min(parity + 2u * j, last)) * (kDim / 8u) + dt * 2u;
    coopMatLoadNV(v_tiles[j], QuadsIn(args.v_cache).v, at, kDim / 8u, false);
  }
}

void main() {
  uint t = gl_LocalInvocationIndex, lane = gl_SubgroupInvocationID, sg = gl_SubgroupID;
  uint g = gl_WorkGroupID.x, s = gl_WorkGroupID.y, qh0 = g * GROUP;
  uint heads = args.kv_heads * GROUP, half_dim = kDim / 2u;
  uint position = WordsIn(args.step).v[0];
  uint keys = position + 1u;  // every earlier key (layers without a window)
  if (keys > args.max_keys) return;
  uint ranges = min(args.splits, (keys + args.range_keys - 1u) / args.range_keys);
  if (s >= ranges) return;
  uint per_range = (keys + ranges - 1u) / ranges;
  uint begin = min(s * per_range, keys);
  uint end = min(begin + per_range, keys);
  bool has_new_key = end == keys;
  uint tiles_end = has_new_key ? end - 1u : end;  // the keys the tiles cover: the new one apart
  uint row_quads_of_head = KV_CACHE_ROW(0u, g, args.slots, kDim) / 8u;  // uvec4s: 8 halves each
  if (tiles_end > begin) load_pass_tiles(row_quads_of_head, begin, min(kPass, tiles_end - begin));

  // Q rows rotated (RoPE, half-split pairs), f32 in q_rows and f16 hi + lo in the tiles; rows past
  // GROUP zero. P's rows past GROUP zero once.
  FloatsIn qkv = FloatsIn(args.qkv);
  for (uint e = t; e < 16u * kDim; e += T) {
    uint r = e / kDim, d = e % kDim, i = d % half_dim;
    float q = 0.0;
    if (r < GROUP) {
      vec2 cs = rope_cos_sin(args.inv_freq, position, i, args.concentration);
      uint base = (qh0 + r) * kDim;
      float a = qkv.v[base + i], b = qkv.v[base + i + half_dim];
      q = d < half_dim ? a * cs.x - b * cs.y : b * cs.x + a * cs.y;
    }
    q_rows[e] = q;
  }
  for (uint e = t; e < 16u * kPStride; e += T) {
    if (e / kPStride >= GROUP) {
      p_hi[e] = uvec4(0u);
      p_lo[e] = uvec4(0u);
    }
  }
  if (has_new_key) {  // the new key rotated and rounded as the cache holds it, and its value
    for (uint p = t; p < half_dim / 2u; p += T) {
      uint i = 2u * p, base = (heads + g) * kDim;
      vec2 cs0 = rope_cos_sin(args.inv_freq, position, i, args.concentration);
      vec2 cs1 = rope_cos_sin(args.inv_freq, position, i + 1u, args.concentration);
      vec2 a = vec2(qkv.v[base + i], qkv.v[base + i + 1u]), b = vec2(qkv.v[base + i + half_dim], qkv.v[base + i + 1u + half_dim]);
      k_new_halves[i >> 1] = packHalf2x16(vec2(a.x * cs0.x - b.x * cs0.y, a.y * cs1.x - b.y * cs1.y));
      k_new_halves[(i + half_dim) >> 1] = packHalf2x16(vec2(b.x * cs0.x + a.x * cs0.y, b.y * cs1.x + a.y * cs1.y));
    }
    for (uint p = t; p < kDim / 2u; p += T) {
      uint from = (heads + args.kv_heads + g) * kDim + 2u * p;
      v_new_halves[p] = packHalf2x16(vec2(qkv.v[from], qkv.v[from + 1u]));
    }
  }
  barrier();
  for (uint e = t; e < 16u * kDim / 2u; e += T) {  // pairs of dims into the f16 tiles
    uint r = e / (kDim / 2u), d = 2u * (e % (kDim / 2u));
    vec2 q = vec2(q_rows[r * kDim + d], q_rows[r * kDim + d + 1u]);
    vec2 hi = vec2(hi_part(q.x), hi_part(q.y));
    uint at = r * kQStride + d / 8u, word = (d % 8u) / 2u;
    q_hi[at][word] = packHalf2x16(hi);
    q_lo[at][word] = packHalf2x16(q - hi);
  }
  if (has_new_key) {
    uint slot = KV_CACHE_ROW(position % args.slots, g, args.slots, kDim);
    for (uint p = t; p < kDim / 2u; p += T) {
      Words(args.k_cache).v[(slot >> 1) + p] = k_new_halves[p];
      Words(args.v_cache).v[(slot >> 1) + p] = v_new_halves[p];
    }
    // Each row's score of the new key: subgroup r, two dims per lane.
    for (uint r = sg; r < GROUP; r += T / 32u) {
      vec2 k = unpackHalf2x16(k_new_halves[lane]);
      float part = q_rows[r * kDim + 2u * lane] * k.x + q_rows[r * kDim + 2u * lane + 1u] * k.y;
      float score = subgroupAdd(part) * args.scale;
      if (subgroupElect()) new_score[r] = score;
    }
  }
  barrier();
  // Each row's running maximum, sum and output: the new key's alone, or nothing yet.
  if (t < 16u) {
    row_max[t] = has_new_key && t < GROUP ? new_score[t] : -1.0 / 0.0;
    row_sum[t] = has_new_key && t < GROUP ? 1.0 : 0.0;
  }
  for (uint e = t; e < kGroupValues; e += T) {
    uint d = e % kDim;
    out_acc[e] = has_new_key ? unpackHalf2x16(v_new_halves[d >> 1])[d & 1u] : 0.0;
  }
  barrier();

  MAT16 qa_hi[kDimTiles], qa_lo[kDimTiles];
  [[unroll]] for (uint dt = 0u; dt < kDimTiles; ++dt) {
    coopMatLoadNV(qa_hi[dt], q_hi, dt * 2u, kQStride, false);
    coopMatLoadNV(qa_lo[dt], q_lo, dt * 2u, kQStride, false);
  }
  for (uint c0 = begin; c0 < tiles_end; c0 += kPass) {
    uint n = min(kPass, tiles_end - c0), tiles = (n + 15u) / 16u;
    if (c0 != begin) load_pass_tiles(row_quads_of_head, c0, n);
    // S = Q K^T, subgroup sg the key tiles sg, sg + 8.
    [[unroll]] for (uint i = 0u; i < 2u; ++i) {
      uint tile = sg + 8u * i;
      if (tile >= tiles) break;
      ACC32 acc = ACC32(0.0);
      [[unroll]] for (uint dt = 0u; dt < kDimTiles; ++dt) {
        acc = coopMatMulAddNV(qa_hi[dt], k_tiles[i][dt], acc);
        acc = coopMatMulAddNV(qa_lo[dt], k_tiles[i][dt], acc);
      }
      coopMatStoreNV(acc, s_tile, tile * 4u, kSStride, false);
    }
    barrier();
    // The softmax of rows sg, sg + 8 over the pass: lane takes key pairs 2u, 2u + 1, u = lane + 32 i.
    for (uint r = sg; r < GROUP; r += T / 32u) {
      vec2 x[4];
      float m = -1.0 / 0.0;
      [[unroll]] for (uint i = 0u; i < 4u; ++i) {
        uint k = 2u * (lane + 32u * i);
        x[i] = vec2(k < n ? s_at(r, k) * args.scale : -1.0 / 0.0, k + 1u < n ? s_at(r, k + 1u) * args.scale : -1.0 / 0.0);
        m = max(m, max(x[i].x, x[i].y));
      }
      float old_max = row_max[r];
      float top = max(old_max, subgroupMax(m));  // finite: the pass has a key
      float sum = 0.0;
      [[unroll]] for (uint i = 0u; i < 4u; ++i) {
        vec2 p = exp(x[i] - top);
        sum += p.x + p.y;
        vec2 hi = vec2(hi_part(p.x), hi_part(p.y));
        uint k = 2u * (lane + 32u * i), at = r * kPStride + k / 8u, word = (k % 8u) / 2u;
        p_hi[at][word] = packHalf2x16(hi);
        p_lo[at][word] = packHalf2x16(p - hi);
      }
      sum = subgroupAdd(sum);
      if (subgroupElect()) {
        float rescale = exp(old_max - top);
        row_rescale[r] = rescale;
        row_sum[r] = row_sum[r] * rescale + sum;
        row_max[r] = top;
      }
    }
    barrier();
    // O_pass = P V: subgroup sg the dims tile sg % 4 over the key tiles of parity sg / 4.
    {
      uint dt = sg % kDimTiles, parity = sg / kDimTiles;
      ACC32 acc = ACC32(0.0);
      [[unroll]] for (uint j = 0u; j < kPass / 32u; ++j) {
        uint tile = parity + 2u * j;
        if (tile >= tiles) break;
        MAT16 pa_hi, pa_lo;
        coopMatLoadNV(pa_hi, p_hi, tile * 2u, kPStride, false);
        coopMatLoadNV(pa_lo, p_lo, tile * 2u, kPStride, false);
        acc = coopMatMulAddNV(pa_hi, v_tiles[j], acc);
        acc = coopMatMulAddNV(pa_lo, v_tiles[j], acc);
      }
      coopMatStoreNV(acc, s_tile, sg * 16u * kOStride, kOStride, false);
    }
    barrier();
    for (uint e = t; e < kGroupValues; e += T) {
      uint r = e / kDim, d = e % kDim, dt = d / 16u, dd = d % 16u;
      float add = 0.0;
      [[unroll]] for (uint parity = 0u; parity < (T / 32u) / kDimTiles; ++parity) {
        uint at = (parity * kDimTiles + dt) * 16u * kOStride + r * kOStride;
        add += uintBitsToFloat(s_tile[at + dd / 4u][dd & 3u]);
      }
      out_acc[e] = out_acc[e] * row_rescale[r] + add;
    }
    barrier();  // s_tile and the P tiles free for the next pass
  }

  if (ranges == 1u) {  // the only range: out with the sink here
    [[unroll]] for (uint o = 0u; o < kOutputsPerInvocation; ++o) {
      uint e = t + o * T;
      if (e >= kGroupValues) break;
      uint hh = e / kDim, h = qh0 + hh;
      float sink = FloatsIn(args.sinks).v[h];
      float top = max(row_max[hh], sink), w = exp(row_max[hh] - top);
      Floats(args.target).v[h * kDim + e % kDim] = out_acc[e] * w / (row_sum[hh] * w + exp(sink - top));
    }
    return;
  }
  SharedFloats partials = SharedFloats(args.partials);
  [[unroll]] for (uint o = 0u; o < kOutputsPerInvocation; ++o) {
    uint e = t + o * T;
    if (e >= kGroupValues) break;
    uint hh = e / kDim, d = e % kDim;
    uint base = ((qh0 + hh) * args.splits + s) * (kDim + 2u);
    partials.v[base + d] = out_acc[e];
    if (d == 0u) {
      partials.v[base + kDim] = row_max[hh];
      partials.v[base + kDim + 1u] = row_sum[hh];
    }
  }
  if (!arrive_last(args.counters, g, ranges)) return;
  [[unroll]] for (uint o = 0u; o < kOutputsPerInvocation; ++o) {
    uint e = t + o * T;
    if (e >= kGroupValues) break;
    uint hh = e / kDim, d = e % kDim, h = qh0 + hh;
    float top = -1.0 / 0.0, denominator = 0.0, sum = 0.0;
    for (uint r0 = 0u; r0 < ranges; r0 += 16u) {
      float range_max[16], range_sum[16], range_value[16];
      [[unroll]] for (uint u = 0u; u < 16u; ++u) {
        uint base = (h * args.splits + min(r0 + u, ranges - 1u)) * (kDim + 2u);
        range_max[u] = partials.v[base + kDim];
        range_sum[u] = partials.v[base + kDim + 1u];
        range_value[u] = partials.v[base + d];
      }
      [[unroll]] for (uint u = 0u; u < 16u; ++u) {
        if (r0 + u >= ranges) break;
        float new_top = max(top, range_max[u]);
        float rescale = exp(top - new_top), weight = exp(range_max[u] - new_top);
        denominator = denominator * rescale + range_sum[u] * weight;
        sum = sum * rescale + range_value[u] * weight;
        top = new_top;
      }
    }
    float sink = FloatsIn(args.sinks).v[h];
    float with_sink = max(top, sink), w_top = exp(top - with_sink);
    Floats(args.target).v[h * kDim + d] = sum * w_top / (denominator * w_top + exp(sink - with_sink));
  }
}

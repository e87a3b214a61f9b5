#version 450
#extension GL_GOOGLE_include_directive : require
// Decode attention of the token at step.position, one workgroup per (KV head g, key range s) with
// all GROUP query heads of g: every key and value of the range is loaded once per step (GQA), and
// all of them at once. The kernel is a short chain: the first pass's key rows (invocation = key)
// and values (invocation = (slice, dim pair)) are loaded before anything else, so the step waits on
// memory once while Q and the new K rotate; then the scores of every query head, their maxima and
// sums across the workgroup (shared memory), the probabilities [key, head] in shared memory, and
// the values weighted by them, each invocation over its slice's keys for every head; the slices'
// accumulators add up through shared memory. Ranges longer than DECODE_ATTENTION_SIZE keys take
// several passes with an online softmax (the next pass's loads issued during this one). The ranges
// merge as in attention_decode: the last range of g to finish weighs them with the sinks (the
// sink's probability dropped, as the CPU engine). The range holding the position stores the new
// K and V in its cache slot (position % slots, a ring on sliding layers) and uses them from shared
// memory. The caches in ENCODING (f32, or f16 pairs of dims per word).
#include "common.glsl"
layout(local_size_x = DECODE_ATTENTION_SIZE) in;
layout(push_constant) uniform Push { AttentionDecodeArgs args; };
// Query heads per workgroup: all of a KV head's (args.group) by default, a divisor of them to
// spread the work over more workgroups (GPTOSS_VK_ATTN_KERNEL=group with GPTOSS_VK_ATTN_HEADS).
layout(constant_id = SPEC_ATTENTION_GROUP) const uint GROUP = 1u;
layout(constant_id = SPEC_ATTENTION_HEAD_DIM) const uint HEAD_DIM = 64u;

const uint T = DECODE_ATTENTION_SIZE;  // invocations, and keys per pass (one per invocation)
const uint S = SUBGROUP_SIZE;
const uint kSubgroups = T / S;
const uint kQuads = HEAD_DIM / 4u;
const uint kPairs = HEAD_DIM / 2u;
const bool kF16 = ENCODING == ENC_F16;
// Values: invocation t < kSlices * kPairs takes dim pair t % kPairs of the keys of slice t / kPairs
// (keys slice, slice + kSlices, ...): with head_dim 64 one subgroup per slice, each load one key's row.
const uint kSlices = T / kPairs;
const uint kSliceKeys = (T + kSlices - 1u) / kSlices;
const uint kValueBatch = kSliceKeys < 32u ? kSliceKeys : 32u;  // value loads in flight per invocation
const uint kValueBatches = (kSliceKeys + kValueBatch - 1u) / kValueBatch;
// Keys: the quads of a key row in registers at once (64 registers), in batches beyond.
const uint kKeyBatch = kQuads < (kF16 ? 32u : 16u) ? kQuads : (kF16 ? 32u : 16u);
const uint kKeyBatches = (kQuads + kKeyBatch - 1u) / kKeyBatch;
// Quads per key load: 2 (16 bytes) with an f16 cache where HEAD_DIM is a multiple of 8. (Not as
// `kF16 && ...`: glslang 12 emits such a constant after its first use, invalid SPIR-V.)
const uint kKeyStep = 1u + (kF16 ? 1u : 0u) * (HEAD_DIM % 8u == 0u ? 1u : 0u);
const bool kKeyQuadPairs = kKeyStep == 2u;
const uint kGroupQuads = (GROUP + 3u) / 4u;
const uint kGroupValues = GROUP * HEAD_DIM;
const uint kOutputsPerInvocation = (kGroupValues + T - 1u) / T;
const uint kScratch = 2u * kMaxAttentionGroupValues;
const uint kMergeSlots = kScratch / kGroupValues;  // slices' accumulators added at once (>= 2)

shared vec4 q_rows[GROUP * kQuads];  // [GROUP, HEAD_DIM], rotated
// The new token's rotated key and its value as the cache holds them (f16: packed pairs, read back
// through memory: NVIDIA's compiler folds unpackHalf2x16(packHalf2x16(x)) into x).
shared vec4 k_new[kQuads];
shared float v_new[HEAD_DIM];
shared uint k_new_halves[kPairs], v_new_halves[kPairs];
shared vec4 probs[T * kGroupQuads];  // the pass's probabilities [key, head]
shared float part_max[kSubgroups * GROUP], part_sum[kSubgroups * GROUP];
shared float head_max[GROUP], head_sum[GROUP], head_rescale[GROUP];
shared float scratch[kScratch];

vec4 new_key_quad(uint d4) {
  if (!kF16) return k_new[d4];
  return vec4(unpackHalf2x16(k_new_halves[2u * d4]), unpackHalf2x16(k_new_halves[2u * d4 + 1u]));
}
vec2 new_value_pair(uint d) {  // dims d, d + 1 (d even)
  return kF16 ? unpackHalf2x16(v_new_halves[d >> 1]) : vec2(v_new[d], v_new[d + 1u]);
}

// This invocation's key row: quads b * kKeyBatch .. of the current batch, as loaded.
uvec4 key_words[kKeyBatch];   // f32
uvec2 key_halves[kKeyBatch];  // f16
void load_key_batch(uint row, uint b) {
  [[unroll]] for (uint q = 0u; q < kKeyBatch; q += kKeyStep) {
    uint d4 = min(b * kKeyBatch + q, kQuads - kKeyStep);
    if (kKeyQuadPairs) {
      uvec4 words = QuadsIn(args.k_cache).v[(row >> 3) + (d4 >> 1)];
      key_halves[q] = words.xy;
      key_halves[q + 1u] = words.zw;
    } else if (kF16) {
      key_halves[q] = PairsIn(args.k_cache).v[(row >> 2) + d4];
    } else {
      key_words[q] = QuadsIn(args.k_cache).v[(row >> 2) + d4];
    }
  }
}
vec4 key_quad(uint q) {
  if (!kF16) return uintBitsToFloat(key_words[q]);
  return vec4(unpackHalf2x16(key_halves[q].x), unpackHalf2x16(key_halves[q].y));
}

// This invocation's values of one batch: f16 one word (a dim pair) per key, f32 two.
uint value_halves[kValueBatch];
uvec2 value_words[kValueBatch];
// The key (within the pass) of a slice's i-th value.
uint slice_key(uint slice, uint i) { return slice + i * kSlices; }
void load_value_batch(uint g, uint chunk, uint chunk_keys, uint slice, uint pair, uint vb) {
  [[unroll]] for (uint i = 0u; i < kValueBatch; ++i) {
    uint j = chunk + min(slice_key(slice, vb * kValueBatch + i), chunk_keys - 1u);
    uint row = KV_CACHE_ROW(j % args.slots, g, args.slots, HEAD_DIM);
    if (kF16) {
      value_halves[i] = WordsIn(args.v_cache).v[(row >> 1) + pair];
    } else {
      value_words[i] = PairsIn(args.v_cache).v[(row >> 1) + pair];
    }
  }
}

void main() {
  uint t = gl_LocalInvocationIndex, sg = gl_SubgroupID;
  uint w = gl_WorkGroupID.x, s = gl_WorkGroupID.y, qh0 = w * GROUP, g = qh0 / args.group;
  uint heads = args.kv_heads * args.group, half_dim = HEAD_DIM / 2u;
  uint position = WordsIn(args.step).v[0];
  uint first_key = (args.window != 0u && position + 1u > args.window) ? position + 1u - args.window : 0u;
  uint keys = position + 1u - first_key;
  if (keys > args.max_keys) return;  // a position the dispatch was not made for
  uint ranges = min(args.splits, (keys + args.range_keys - 1u) / args.range_keys);
  if (s >= ranges) return;
  uint per_range = (keys + ranges - 1u) / ranges;
  uint begin = min(first_key + s * per_range, position + 1u);
  uint end = min(begin + per_range, position + 1u);
  bool has_new_key = end == position + 1u;
  uint slice = t / kPairs, pair = t % kPairs;
  bool values_here = slice < kSlices;

  // The first pass's loads, before anything waits.
  uint chunk_keys = min(T, end - begin);
  if (PROBE != 23u) load_key_batch(KV_CACHE_ROW((begin + min(t, chunk_keys - 1u)) % args.slots, g, args.slots, HEAD_DIM), 0u);
  if (values_here && PROBE != 23u) load_value_batch(g, begin, chunk_keys, slice, pair, 0u);

  FloatsIn qkv = FloatsIn(args.qkv);
  for (uint p = t; p < GROUP * half_dim; p += T) {
    uint hh = p / half_dim, i = p % half_dim;
    vec2 cs = rope_cos_sin(args.inv_freq, position, i, args.concentration);
    uint base = (qh0 + hh) * HEAD_DIM;
    float a = qkv.v[base + i], b = qkv.v[base + i + half_dim];
    uint lo = hh * HEAD_DIM + i, hi = lo + half_dim;
    q_rows[lo >> 2][lo & 3u] = a * cs.x - b * cs.y;
    q_rows[hi >> 2][hi & 3u] = b * cs.x + a * cs.y;
  }
  if (has_new_key) {
    for (uint i = t; i < half_dim; i += T) {
      uint base = (heads + g) * HEAD_DIM;
      vec2 cs = rope_cos_sin(args.inv_freq, position, i, args.concentration);
      float a = qkv.v[base + i], b = qkv.v[base + i + half_dim];
      k_new[i >> 2][i & 3u] = a * cs.x - b * cs.y;  // f16: packed in pairs below
      k_new[(i + half_dim) >> 2][(i + half_dim) & 3u] = b * cs.x + a * cs.y;
    }
    for (uint p = t; p < kPairs; p += T) {
      uint from = (heads + args.kv_heads + g) * HEAD_DIM + 2u * p;
      vec2 v = vec2(qkv.v[from], qkv.v[from + 1u]);
      if (kF16) {
        v_new_halves[p] = packHalf2x16(v);
      } else {
        v_new[2u * p] = v.x;
        v_new[2u * p + 1u] = v.y;
      }
    }
  }
  if (t < GROUP) {
    head_max[t] = -1.0 / 0.0;
    head_sum[t] = 0.0;
  }
  barrier();
  if (has_new_key) {
    // f16: the rotated key packed in pairs (from the f32 rows all invocations wrote); stored by the
    // KV head's first workgroup of the range (the others make the same rows for themselves).
    bool stores = qh0 % args.group == 0u;
    uint slot = KV_CACHE_ROW(position % args.slots, g, args.slots, HEAD_DIM);
    for (uint p = t; p < kPairs; p += T) {
      uint i = 2u * p;
      vec2 k = vec2(k_new[i >> 2][i & 3u], k_new[i >> 2][(i & 3u) + 1u]);
      if (kF16) {
        k_new_halves[p] = packHalf2x16(k);
        if (stores) {
          Words(args.k_cache).v[(slot + i) >> 1] = k_new_halves[p];
          Words(args.v_cache).v[(slot + i) >> 1] = v_new_halves[p];
        }
      } else if (stores) {
        store_kv_pair(args.k_cache, slot, i, k);
        store_kv_pair(args.v_cache, slot, i, vec2(v_new[i], v_new[i + 1u]));
      }
    }
    barrier();  // k_new_halves
  }

  vec2 acc[GROUP];  // this invocation's dim pair of each head, over its slice's keys
  [[unroll]] for (uint hh = 0u; hh < GROUP; ++hh) acc[hh] = vec2(0.0);
  for (uint chunk = begin; chunk < end; chunk += T) {
    chunk_keys = min(T, end - chunk);
    // Scores, invocation = key.
    uint j = chunk + t;
    bool live = t < chunk_keys;
    uint row = KV_CACHE_ROW((chunk + min(t, chunk_keys - 1u)) % args.slots, g, args.slots, HEAD_DIM);
    float score[GROUP];
    [[unroll]] for (uint hh = 0u; hh < GROUP; ++hh) score[hh] = 0.0;
    [[unroll]] for (uint b = 0u; b < kKeyBatches; ++b) {
      if (PROBE == 22u || !live) break;  // (a short pass leaves most subgroups idle)
      if (b > 0u) load_key_batch(row, b);
      [[unroll]] for (uint q = 0u; q < kKeyBatch; ++q) {
        uint d4 = b * kKeyBatch + q;
        if (d4 >= kQuads) break;
        vec4 k4 = has_new_key && j == position ? new_key_quad(d4) : key_quad(q);
        [[unroll]] for (uint hh = 0u; hh < GROUP; ++hh) score[hh] += dot(q_rows[hh * kQuads + d4], k4);
      }
    }
    uint next = chunk + T;
    if (next < end) {  // the next pass's first key batch, loading during this pass
      uint next_keys = min(T, end - next);
      load_key_batch(KV_CACHE_ROW((next + min(t, next_keys - 1u)) % args.slots, g, args.slots, HEAD_DIM), 0u);
    }
    // Each head's maximum over the workgroup, the running maximum, the rescale of what came before.
    [[unroll]] for (uint hh = 0u; hh < GROUP; ++hh) {
      score[hh] = live ? score[hh] * args.scale : -1.0 / 0.0;
      float m = subgroupMax(score[hh]);
      if (subgroupElect()) part_max[sg * GROUP + hh] = m;
    }
    barrier();
    if (t < GROUP) {
      float top = head_max[t];
      for (uint i = 0u; i < kSubgroups; ++i) top = max(top, part_max[i * GROUP + t]);  // finite: a live key
      head_rescale[t] = exp(head_max[t] - top);
      head_max[t] = top;
    }
    barrier();
    [[unroll]] for (uint q4 = 0u; q4 < kGroupQuads; ++q4) {
      vec4 p4 = vec4(0.0);
      [[unroll]] for (uint c = 0u; c < 4u; ++c) {
        uint hh = 4u * q4 + c;
        if (hh >= GROUP) break;
        float p = live ? exp(score[hh] - head_max[hh]) : 0.0;
        p4[c] = p;
        float sum = subgroupAdd(p);
        if (subgroupElect()) part_sum[sg * GROUP + hh] = sum;
      }
      probs[t * kGroupQuads + q4] = p4;
    }
    barrier();
    if (t < GROUP) {
      float sum = head_sum[t] * head_rescale[t];
      for (uint i = 0u; i < kSubgroups; ++i) sum += part_sum[i * GROUP + t];
      head_sum[t] = sum;
    }
    // Values: this slice's keys, every head.
    if (values_here && PROBE != 21u) {
      [[unroll]] for (uint hh = 0u; hh < GROUP; ++hh) acc[hh] *= head_rescale[hh];
      [[unroll]] for (uint vb = 0u; vb < kValueBatches; ++vb) {
        if (vb > 0u) load_value_batch(g, chunk, chunk_keys, slice, pair, vb);
        [[unroll]] for (uint i = 0u; i < kValueBatch; ++i) {
          uint k = slice_key(slice, vb * kValueBatch + i);
          if (k >= chunk_keys) break;  // past the pass's keys (the loads were clamped to its last)
          vec2 v = kF16 ? unpackHalf2x16(value_halves[i]) : uintBitsToFloat(value_words[i]);
          // (has_new_key: in an earlier range a key past the range's end may be the position)
          if (has_new_key && chunk + k == position) v = new_value_pair(2u * pair);
          [[unroll]] for (uint q4 = 0u; q4 < kGroupQuads; ++q4) {
            vec4 p4 = probs[k * kGroupQuads + q4];
            [[unroll]] for (uint c = 0u; c < 4u; ++c) {
              uint hh = 4u * q4 + c;
              if (hh < GROUP) acc[hh] += p4[c] * v;
            }
          }
        }
      }
      if (next < end) load_value_batch(g, next, min(T, end - next), slice, pair, 0u);
    }
    barrier();  // probs, part_max and part_sum free for the next pass
  }

  // The slices' accumulators, added kMergeSlots at a time.
  float total[kOutputsPerInvocation];
  [[unroll]] for (uint o = 0u; o < kOutputsPerInvocation; ++o) total[o] = 0.0;
  for (uint first = 0u; first < kSlices; first += kMergeSlots) {
    if (values_here && slice >= first && slice < first + kMergeSlots) {
      uint at = (slice - first) * kGroupValues + 2u * pair;
      [[unroll]] for (uint hh = 0u; hh < GROUP; ++hh) {
        scratch[at + hh * HEAD_DIM] = acc[hh].x;
        scratch[at + hh * HEAD_DIM + 1u] = acc[hh].y;
      }
    }
    barrier();
    uint held = min(kMergeSlots, kSlices - first);
    [[unroll]] for (uint o = 0u; o < kOutputsPerInvocation; ++o) {
      uint e = t + o * T;
      if (e < kGroupValues)
        for (uint c = 0u; c < held; ++c) total[o] += scratch[c * kGroupValues + e];
    }
    barrier();
  }

  if (ranges == 1u) {  // the only range: out with the sink here
    [[unroll]] for (uint o = 0u; o < kOutputsPerInvocation; ++o) {
      uint e = t + o * T;
      if (e >= kGroupValues) break;
      uint hh = e / HEAD_DIM, h = qh0 + hh;
      float sink = FloatsIn(args.sinks).v[h];
      float top = max(head_max[hh], sink), w = exp(head_max[hh] - top);
      Floats(args.target).v[h * HEAD_DIM + e % HEAD_DIM] = total[o] * w / (head_sum[hh] * w + exp(sink - top));
    }
    return;
  }
  SharedFloats partials = SharedFloats(args.partials);
  [[unroll]] for (uint o = 0u; o < kOutputsPerInvocation; ++o) {
    uint e = t + o * T;
    if (e >= kGroupValues) break;
    uint hh = e / HEAD_DIM, d = e % HEAD_DIM;
    uint base = ((qh0 + hh) * args.splits + s) * (HEAD_DIM + 2u);
    partials.v[base + d] = total[o];
    if (d == 0u) {
      partials.v[base + HEAD_DIM] = head_max[hh];
      partials.v[base + HEAD_DIM + 1u] = head_sum[hh];
    }
  }
  if (!arrive_last(args.counters, w, ranges)) return;
  // The merge, by the last range, in one pass over the ranges with a running maximum (16 ranges'
  // loads in flight at once).
  [[unroll]] for (uint o = 0u; o < kOutputsPerInvocation; ++o) {
    uint e = t + o * T;
    if (e >= kGroupValues) break;
    uint hh = e / HEAD_DIM, d = e % HEAD_DIM, h = qh0 + hh;
    float top = -1.0 / 0.0, denominator = 0.0, sum = 0.0;
    for (uint r0 = 0u; r0 < ranges; r0 += 16u) {
      float range_max[16], range_sum[16], range_value[16];
      [[unroll]] for (uint u = 0u; u < 16u; ++u) {
        uint base = (h * args.splits + min(r0 + u, ranges - 1u)) * (HEAD_DIM + 2u);
        range_max[u] = partials.v[base + HEAD_DIM];
        range_sum[u] = partials.v[base + HEAD_DIM + 1u];
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
    Floats(args.target).v[h * HEAD_DIM + d] = sum * w_top / (denominator * w_top + exp(sink - with_sink));
  }
}

#version 450
#extension GL_GOOGLE_include_directive : require
// Decode attention of the token at step.position (flash-decoding). The keys (t-W < j <= t on
// sliding layers) of KV head g are cut into ranges of at least args.range_keys keys, at
// most the `splits` workgroup rows dispatched (the dispatch is recorded once for every position;
// workgroups past the ranges the position needs return at once). Workgroup (w, range) takes the
// GROUP query heads w * GROUP .. of KV head g = w * GROUP / group (GQA: h / group == g; GROUP is
// all of g's query heads by default, VulkanTuning::attention_heads fewer). Each subgroup takes its own
// blocks of SUBGROUP_SIZE / KEY_LANES keys with no workgroup barrier in the key loop: KEY_LANES
// lanes per key for the scores of the GROUP query heads (each half of the key row), an online
// softmax per head across the lanes, then lane = dims for the values (coalesced), the
// probabilities passed through shared memory. The subgroups'
// (maximum, sum, weighted V) merge through shared memory at the end; the last range of w to
// finish merges the ranges with the sinks in one pass with a running maximum: with M the largest
// of the sink and their maxima, out = sum_s e^(m_s - M) V_s / (e^(sink - M) + sum_s e^(m_s - M)
// l_s), the sink's probability dropped, as the CPU engine. A single range finishes by itself. The rotated new Q and K rows are made here
// (RoPE, half-split pairs, YaRN tables), and the range holding the position stores the new K and
// V in its cache slot (position % slots, a ring on sliding layers). The caches in ENCODING (f32, or
// f16: half the bytes per key; the new key and value used as the cache holds them).
#extension GL_KHR_shader_subgroup_shuffle : require
#include "common.glsl"
layout(local_size_x = DECODE_ATTENTION_SIZE) in;
layout(push_constant) uniform Push { AttentionDecodeArgs args; };
// The shape as constants, so the per-lane arrays below live in registers at their exact size.
// Query heads per workgroup: all of a KV head's by default, fewer to spread a short context over
// more workgroups (VulkanTuning::attention_heads; each then reads its KV head's keys and values itself).
layout(constant_id = SPEC_ATTENTION_GROUP) const uint GROUP = 1u;
layout(constant_id = SPEC_ATTENTION_HEAD_DIM) const uint HEAD_DIM = 64u;
// Lanes per key in the score loop (1 or 2; Kernels::attention_key_lanes checks the shape): with
// two, each lane loads every other 16-byte word of its key's row, half the registers the next
// block's row in flight takes (f32 cache: 128 instead of 152 on the H100, two workgroups per SM
// instead of one), and the two partial scores add through one shuffle; a subgroup's block is then
// S / KEY_LANES keys.
layout(constant_id = SPEC_ATTENTION_KEY_LANES) const uint KEY_LANES = 1u;
// The value loop's keys per step: one shared load of their probabilities per query head (a vec4),
// their value loads before any is used (faster than one key per step on the H100: cb42e2c).
const uint PROB_KEYS = 4u;

// SPIR-V 1.5 (Vulkan 1.2) pipelines run in subgroups of the device's subgroupSize, which the
// launcher passes as SUBGROUP_SIZE: a constant here, so the key blocks unroll.
const uint S = SUBGROUP_SIZE;
const uint kSubgroups = DECODE_ATTENTION_SIZE / S;
const uint kQuads = HEAD_DIM / 4u;
const uint kBlockKeys = S / KEY_LANES;                // keys of one subgroup's block
const uint kStride = kSubgroups * kBlockKeys;         // keys of one step of the workgroup
// A key row as 16-byte words: f32 one quad each, f16 two (8-byte quads where HEAD_DIM is not a
// multiple of 8: one each). Lane part p of a key holds words p, p + KEY_LANES, ...
// (Nested selects: glslang 12 miscompiles && between specialization constants.)
const uint kQuadsPerWord = ENCODING == ENC_F16 ? (HEAD_DIM % 8u == 0u ? 2u : 1u) : 1u;
const bool kWideHalves = kQuadsPerWord == 2u;
const uint kLaneWords = kQuads / kQuadsPerWord / KEY_LANES;
const uint kLaneQuads = kLaneWords * kQuadsPerWord;
// The values: with an f16 cache lane owns the dim pairs p = lane, lane + S, ... (dims 2p, 2p + 1:
// one word); acc index i holds dim value_dim(lane, i).
const uint kPairs = HEAD_DIM / 2u;
const uint kPairsPerLane = (kPairs + S - 1u) / S;
// With an f32 cache lane owns dims lane, lane + S, ... instead (one 4-byte load each): pairs of f32
// dims measured slower on the H100 (b10646b).
const bool kValuePairs = ENCODING == ENC_F16;
const uint kDimsPerLane = kValuePairs ? 2u * kPairsPerLane : (HEAD_DIM + S - 1u) / S;
const uint kGroupValues = GROUP * HEAD_DIM;
const uint kOutputsPerInvocation = (kGroupValues + DECODE_ATTENTION_SIZE - 1u) / DECODE_ATTENTION_SIZE;
const uint kScratch = 2u * kMaxAttentionGroupValues;
const uint kMergeSlots = kScratch / kGroupValues;  // subgroups' accumulators held at once (>= 2)

shared vec4 q_rows[GROUP * kQuads];  // [GROUP, HEAD_DIM], rotated
// The new token's rotated key and its value as the cache holds them: f32 in k_new / v_new; f16 as
// packed pairs (dims 2p, 2p + 1 in word p) in k_new_halves / v_new_halves, unpacked where they are
// read. The rounding must go through memory: NVIDIA's compiler folds unpackHalf2x16(packHalf2x16(x))
// into x, so a value rounded in registers was used unrounded (the cache held the rounded one).
shared vec4 k_new[kQuads];
shared float v_new[HEAD_DIM];
shared uint k_new_halves[kPairs], v_new_halves[kPairs];
vec4 new_key_quad(uint d4) {
  if (ENCODING != ENC_F16) return k_new[d4];
  return vec4(unpackHalf2x16(k_new_halves[2u * d4]), unpackHalf2x16(k_new_halves[2u * d4 + 1u]));
}
vec2 new_value_pair(uint d) {  // dims d, d + 1 (d even)
  return ENCODING == ENC_F16 ? unpackHalf2x16(v_new_halves[d >> 1]) : vec2(v_new[d], v_new[d + 1u]);
}
// The key loop: each subgroup's probabilities of its block [GROUP, S]; the subgroup merge: up to
// kMergeSlots subgroups' accumulators [GROUP, HEAD_DIM]; the range merge: range weights.
shared float scratch[kScratch];
// The key loop's probabilities, [kSubgroups, GROUP, kBlockKeys]: four keys' in one shared load in the value loop.
shared vec4 block_probs[kSubgroups * GROUP * kBlockKeys / 4u];
shared float subgroup_max[kSubgroups * GROUP], subgroup_sum[kSubgroups * GROUP];
shared float head_max[GROUP], head_sum[GROUP];

uint value_dim(uint lane, uint i) { return kValuePairs ? 2u * (lane + (i >> 1) * S) + (i & 1u) : lane + i * S; }

// The quad of the row that the lane's i-th loaded quad is (part: the lane's part of its key).
uint lane_quad(uint part, uint i) { return ((i / kQuadsPerWord) * KEY_LANES + part) * kQuadsPerWord + i % kQuadsPerWord; }
// The lane's part of its key row in the current block, as loaded: f32 quad lane_quad(part, i) in
// key_words[i], f16 in key_halves[i] (16-byte loads of two quads where HEAD_DIM is a multiple of 8,
// else 8-byte loads).
uvec4 key_words[kLaneQuads];
uvec2 key_halves[kLaneQuads];
void load_key_row(uint j, uint g, uint part) {
  uint row = KV_CACHE_ROW(j % args.slots, g, args.slots, HEAD_DIM);
  if (kWideHalves) {
    [[unroll]] for (uint w = 0u; w < kLaneWords; ++w) {
      uvec4 words = QuadsIn(args.k_cache).v[(row >> 3) + w * KEY_LANES + part];
      key_halves[2u * w] = words.xy;
      key_halves[2u * w + 1u] = words.zw;
    }
  } else if (ENCODING == ENC_F16) {
    [[unroll]] for (uint i = 0u; i < kLaneQuads; ++i) key_halves[i] = PairsIn(args.k_cache).v[(row >> 2) + lane_quad(part, i)];
  } else {
    [[unroll]] for (uint i = 0u; i < kLaneQuads; ++i) key_words[i] = QuadsIn(args.k_cache).v[(row >> 2) + lane_quad(part, i)];
  }
}
// unpackHalf2x16, not bit operations and a multiply by 2^112: measured faster on the H100 (19c456b).
vec4 key_quad(uint i) {  // the lane's i-th quad
  if (ENCODING != ENC_F16) return uintBitsToFloat(key_words[i]);
  return vec4(unpackHalf2x16(key_halves[i].x), unpackHalf2x16(key_halves[i].y));
}

void main() {
  uint t = gl_LocalInvocationIndex, lane = gl_SubgroupInvocationID, sg = gl_SubgroupID;
  uint key_lane = lane / KEY_LANES, part = lane % KEY_LANES;  // the lane's key of a block, its part of the row
  // Workgroup (w, s): query heads qh0 .. qh0 + GROUP - 1 of KV head g (GQA: h / group == g).
  uint w = gl_WorkGroupID.x, s = gl_WorkGroupID.y, qh0 = w * GROUP, g = qh0 / args.group;
  uint heads = args.kv_heads * args.group, half_dim = HEAD_DIM / 2u;
  uint position = WordsIn(args.step).v[0];
  uint first_key = window_first_key(position, args.window);
  uint keys = position + 1u - first_key;
  if (keys > args.max_keys) return;  // a position the dispatch was not made for
  // Ranges of at least args.range_keys keys: by default one block per subgroup (fewer, longer
  // ranges cost less to merge); fewer keys per range spread a short context over more workgroups.
  uint ranges = min(args.splits, (keys + args.range_keys - 1u) / args.range_keys);
  if (s >= ranges) return;
  uint per_range = (keys + ranges - 1u) / ranges;
  uint begin = min(first_key + s * per_range, position + 1u);
  uint end = min(begin + per_range, position + 1u);

  // The first block's key rows, loading while the new Q and K rotate.
  uint block = begin + sg * kBlockKeys;
  if (block < end) load_key_row(min(block + key_lane, end - 1u), g, part);
  FloatsIn qkv = FloatsIn(args.qkv);
  for (uint p = t; p < GROUP * half_dim; p += DECODE_ATTENTION_SIZE) {
    uint hh = p / half_dim, i = p % half_dim;
    vec2 cs = rope_cos_sin(args.rope, position, i, half_dim);
    uint base = (qh0 + hh) * HEAD_DIM;
    float a = qkv.v[base + i], b = qkv.v[base + i + half_dim];
    uint lo = hh * HEAD_DIM + i, hi = lo + half_dim;
    q_rows[lo >> 2][lo & 3u] = a * cs.x - b * cs.y;
    q_rows[hi >> 2][hi & 3u] = b * cs.x + a * cs.y;
  }
  // The range holding the new token stores it and reads it from shared memory (its cache store
  // is not visible to the other invocations without a buffer barrier).
  // Of the KV head's workgroups with this range, the first (qh0 % group == 0) stores it; the others
  // compute the same rows for themselves.
  // Pairs of dims (i, i + 1) at a time.
  bool has_new_key = end == position + 1u;
  if (has_new_key) {
    for (uint p = t; p < half_dim / 2u; p += DECODE_ATTENTION_SIZE) {
      uint i = 2u * p, base = (heads + g) * HEAD_DIM;
      vec2 cs0 = rope_cos_sin(args.rope, position, i, half_dim);
      vec2 cs1 = rope_cos_sin(args.rope, position, i + 1u, half_dim);
      vec2 a = vec2(qkv.v[base + i], qkv.v[base + i + 1u]), b = vec2(qkv.v[base + i + half_dim], qkv.v[base + i + 1u + half_dim]);
      vec2 low = vec2(a.x * cs0.x - b.x * cs0.y, a.y * cs1.x - b.y * cs1.y);
      vec2 high = vec2(b.x * cs0.x + a.x * cs0.y, b.y * cs1.x + a.y * cs1.y);
      uint hi = i + half_dim;
      if (ENCODING == ENC_F16) {
        k_new_halves[i >> 1] = packHalf2x16(low);
        k_new_halves[hi >> 1] = packHalf2x16(high);
      } else {
        k_new[i >> 2][i & 3u] = low.x;
        k_new[(i + 1u) >> 2][(i + 1u) & 3u] = low.y;
        k_new[hi >> 2][hi & 3u] = high.x;
        k_new[(hi + 1u) >> 2][(hi + 1u) & 3u] = high.y;
      }
    }
    for (uint p = t; p < kPairs; p += DECODE_ATTENTION_SIZE) {
      uint from = (heads + args.kv_heads + g) * HEAD_DIM + 2u * p;
      vec2 v = vec2(qkv.v[from], qkv.v[from + 1u]);
      if (ENCODING == ENC_F16) {
        v_new_halves[p] = packHalf2x16(v);
      } else {
        v_new[2u * p] = v.x;
        v_new[2u * p + 1u] = v.y;
      }
    }
  }
  barrier();
  if (has_new_key && qh0 % args.group == 0u) {
    uint slot = KV_CACHE_ROW(position % args.slots, g, args.slots, HEAD_DIM);
    for (uint p = t; p < kPairs; p += DECODE_ATTENTION_SIZE) {
      uint i = 2u * p;
      if (ENCODING == ENC_F16) {  // the words as they are
        Words(args.k_cache).v[(slot + i) >> 1] = k_new_halves[p];
        Words(args.v_cache).v[(slot + i) >> 1] = v_new_halves[p];
      } else {
        store_kv_pair(args.k_cache, slot, i, vec2(k_new[i >> 2][i & 3u], k_new[i >> 2][(i & 3u) + 1u]));
        store_kv_pair(args.v_cache, slot, i, vec2(v_new[i], v_new[i + 1u]));
      }
    }
  }

  // Per subgroup and head: the running maximum (uniform), this lane's share of the sum, and the
  // weighted values of the lane's dims.
  float run_max[GROUP], lane_sum[GROUP], acc[GROUP * kDimsPerLane];
  [[unroll]] for (uint hh = 0u; hh < GROUP; ++hh) {
    run_max[hh] = -1.0 / 0.0;
    lane_sum[hh] = 0.0;
    [[unroll]] for (uint i = 0u; i < kDimsPerLane; ++i) acc[hh * kDimsPerLane + i] = 0.0;
  }
  uint probs = sg * GROUP * kBlockKeys;  // this subgroup's [GROUP, kBlockKeys] of block_probs (a multiple of 4)
  for (; block < end; block += kStride) {
    uint j = block + key_lane;
    float score[GROUP];
    [[unroll]] for (uint hh = 0u; hh < GROUP; ++hh) score[hh] = 0.0;
    [[unroll]] for (uint i = 0u; i < kLaneQuads; ++i) {
      uint d4 = lane_quad(part, i);
      vec4 k4 = j == position ? new_key_quad(d4) : key_quad(i);
      [[unroll]] for (uint hh = 0u; hh < GROUP; ++hh) score[hh] += dot(q_rows[hh * kQuads + d4], k4);
    }
    if (KEY_LANES == 2u)
      [[unroll]] for (uint hh = 0u; hh < GROUP; ++hh) score[hh] += subgroupShuffleXor(score[hh], 1u);
    // The next block's key rows now: their loads overlap this block's softmax and values.
    uint next = block + kStride;
    if (next < end) load_key_row(min(next + key_lane, end - 1u), g, part);
    subgroupBarrier();  // every lane has read the previous block's probabilities
    [[unroll]] for (uint hh = 0u; hh < GROUP; ++hh) {
      float x = j < end ? score[hh] * args.scale : -1.0 / 0.0;
      float new_max = max(run_max[hh], subgroupMax(x));  // finite: the block's first key is visible
      float rescale = exp(run_max[hh] - new_max);
      float p = exp(x - new_max);
      run_max[hh] = new_max;
      lane_sum[hh] = lane_sum[hh] * rescale + (part == 0u ? p : 0.0);  // each key once
      [[unroll]] for (uint i = 0u; i < kDimsPerLane; ++i) acc[hh * kDimsPerLane + i] *= rescale;
      if (part == 0u) block_probs[(probs + hh * kBlockKeys + key_lane) >> 2][key_lane & 3u] = p;
    }
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    // Keys past the range repeat its last key (probability 0), so every load is of a visible
    // key and none waits on a branch: the new key's cache slot is loaded too, then replaced by
    // the shared copy (a load under a condition would keep the loads of the block from
    // overlapping).
    uint last = min(kBlockKeys, end - block) - 1u;
    uint ring = block % args.slots;
    [[unroll]] for (uint k0 = 0u; k0 < kBlockKeys; k0 += PROB_KEYS) {
      float v[PROB_KEYS * kDimsPerLane];  // keys k0 .. k0 + PROB_KEYS - 1, the lane's dims of each
      [[unroll]] for (uint k = 0u; k < PROB_KEYS; ++k) {
        uint kk = min(k0 + k, last), slot = ring + kk;
        if (slot >= args.slots) slot -= args.slots;
        uint row = KV_CACHE_ROW(slot, g, args.slots, HEAD_DIM);
        bool new_key = block + kk == position;
        if (kValuePairs) {
          [[unroll]] for (uint i = 0u; i < kPairsPerLane; ++i) {
            uint d = 2u * min(lane + i * S, kPairs - 1u);
            vec2 cached = load_f16_pair(args.v_cache, row, d);
            vec2 pair = new_key ? new_value_pair(d) : cached;
            v[k * kDimsPerLane + 2u * i] = pair.x;
            v[k * kDimsPerLane + 2u * i + 1u] = pair.y;
          }
        } else {
          [[unroll]] for (uint i = 0u; i < kDimsPerLane; ++i) {
            uint d = min(lane + i * S, HEAD_DIM - 1u);
            float cached = FloatsIn(args.v_cache).v[row + d];
            v[k * kDimsPerLane + i] = new_key ? v_new[d] : cached;
          }
        }
      }
      [[unroll]] for (uint hh = 0u; hh < GROUP; ++hh) {
        uint at = probs + hh * kBlockKeys + k0;
        vec4 p = block_probs[at >> 2];
        [[unroll]] for (uint k = 0u; k < PROB_KEYS; ++k)
          [[unroll]] for (uint i = 0u; i < kDimsPerLane; ++i) acc[hh * kDimsPerLane + i] += p[k] * v[k * kDimsPerLane + i];
      }
    }
  }

  // The subgroups' merge: each weighs its accumulators by e^(its maximum - the range's).
  [[unroll]] for (uint hh = 0u; hh < GROUP; ++hh) {
    float sum = subgroupAdd(lane_sum[hh]);
    if (subgroupElect()) {
      subgroup_max[sg * GROUP + hh] = run_max[hh];
      subgroup_sum[sg * GROUP + hh] = sum;
    }
  }
  barrier();
  [[unroll]] for (uint hh = 0u; hh < GROUP; ++hh) {
    float top = -1.0 / 0.0;
    for (uint i = 0u; i < kSubgroups; ++i) top = max(top, subgroup_max[i * GROUP + hh]);
    float w = run_max[hh] == -1.0 / 0.0 ? 0.0 : exp(run_max[hh] - top);  // 0 for a subgroup with no keys
    [[unroll]] for (uint i = 0u; i < kDimsPerLane; ++i) acc[hh * kDimsPerLane + i] *= w;
    if (t == hh) {
      float sum = 0.0;
      for (uint i = 0u; i < kSubgroups; ++i) {
        float m = subgroup_max[i * GROUP + hh];
        if (m != -1.0 / 0.0) sum += subgroup_sum[i * GROUP + hh] * exp(m - top);
      }
      head_max[hh] = top;
      head_sum[hh] = sum;
    }
  }
  float total[kOutputsPerInvocation];
  [[unroll]] for (uint o = 0u; o < kOutputsPerInvocation; ++o) total[o] = 0.0;
  for (uint first = 0u; first < kSubgroups; first += kMergeSlots) {
    if (sg >= first && sg < first + kMergeSlots) {
      uint at = (sg - first) * kGroupValues;
      [[unroll]] for (uint hh = 0u; hh < GROUP; ++hh)
        [[unroll]] for (uint i = 0u; i < kDimsPerLane; ++i) {
          uint d = value_dim(lane, i);
          if (d < HEAD_DIM) scratch[at + hh * HEAD_DIM + d] = acc[hh * kDimsPerLane + i];
        }
    }
    barrier();
    uint held = min(kMergeSlots, kSubgroups - first);
    [[unroll]] for (uint o = 0u; o < kOutputsPerInvocation; ++o) {
      uint e = t + o * DECODE_ATTENTION_SIZE;
      if (e < kGroupValues)
        for (uint c = 0u; c < held; ++c) total[o] += scratch[c * kGroupValues + e];
    }
    barrier();  // scratch free for the next subgroups (or the range merge)
  }

  if (ranges == 1u) {  // the only range: out with the sink here
    [[unroll]] for (uint o = 0u; o < kOutputsPerInvocation; ++o) {
      uint e = t + o * DECODE_ATTENTION_SIZE;
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
    uint e = t + o * DECODE_ATTENTION_SIZE;
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
  // The merge, by the last range, in one pass over the ranges with a running maximum: every range's
  // maximum, sum and value of the output are loaded at once (16 ranges' worth in flight), so the
  // merge costs one round trip to the L2 cache per 16 ranges, not one per quantity.
  [[unroll]] for (uint o = 0u; o < kOutputsPerInvocation; ++o) {
    uint e = t + o * DECODE_ATTENTION_SIZE;
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
        float new_top = max(top, range_max[u]);  // finite: every range has keys
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

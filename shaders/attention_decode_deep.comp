#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_shuffle : require
// Decode attention over a long context (flash-decoding; attention_decode.glsl: the ranges, the new
// token, the merges). The workgroup holds every query head of its KV head (GROUP, by default the
// whole group) and stages its range's keys and values through shared memory a tile of kTileKeys
// at a time: all invocations load the tile with coalesced 16-byte loads (the next tile's loads in
// flight while this one is used), so the cache crosses the memory bus once per token in as few
// round trips as the tiles, and every query head reads it from shared memory.
// In a tile each subgroup takes SUBGROUP_HEADS query heads and a share of the keys: lane = key for
// the scores (the key row from shared memory against the query rows), an online softmax per head
// with the maximum across the subgroup, then lane = dims for the values, each key's probability
// passed by a shuffle. The subgroups merge in shared memory, the ranges as the other kernel's.
// (The lane = key kernel, attention_decode.comp, reads a KV head's cache once per workgroup of one
// or two query heads, from memory, in a chain of loads per block of keys: at 4096 keys on the H100
// it was ~30 µs per layer alone against ~6 µs of bytes.)
#include "attention_decode.glsl"
layout(constant_id = SPEC_ATTENTION_SUBGROUP_HEADS) const uint SUBGROUP_HEADS = 2u;

const uint S = SUBGROUP_SIZE;
const uint kDimsPerLane = (HEAD_DIM + S - 1u) / S;   // lane owns dims lane, lane + S, ...
const uint kValueUnroll = S < 8u ? S : 8u;           // keys whose values load at once
// Keys per tile: the values fill the merge's scratch (which they use; [kTileKeys, HEAD_DIM]), at
// most 64; the keys' rows one quad longer, so lane = key reads them without bank conflicts.
const uint kTileKeys = ATTENTION_DEEP_TILE_KEYS(HEAD_DIM, kMaxAttentionGroupValues);
const uint kKeyStride = kQuads + 1u;
const uint kTileQuads = kTileKeys * kQuads;
const uint kStaged = (kTileQuads + DECODE_ATTENTION_SIZE - 1u) / DECODE_ATTENTION_SIZE;  // quads per invocation
// Subgroup sg: heads (sg % kHeadGroups) * SUBGROUP_HEADS .., keys of part sg / kHeadGroups of
// kParts (the launcher: GROUP % SUBGROUP_HEADS == 0, kHeadGroups <= kSubgroups).
const uint kHeadGroups = GROUP / SUBGROUP_HEADS;
const uint kParts = kSubgroups / kHeadGroups;

shared vec4 key_tile[kTileKeys * kKeyStride];  // the values: scratch, [kTileKeys, HEAD_DIM]

vec4 staged_keys[kStaged], staged_values[kStaged];
// The subgroup's heads' online softmax: its maximum (uniform), the lane's share of the sum, the
// weighted values of the lane's dims (constant indices only: a register array indexed by the
// subgroup's head would live in memory).
float head_top[SUBGROUP_HEADS], lane_sum[SUBGROUP_HEADS], acc[SUBGROUP_HEADS * kDimsPerLane];

// The tile's rows from the cache into registers: keys past `last` repeat it (weighed 0 later).
void stage_tile(uint first, uint last, uint g, uint kv_rows) {
  uint t = gl_LocalInvocationIndex;
  [[unroll]] for (uint i = 0u; i < kStaged; ++i) {
    uint e = min(t + i * DECODE_ATTENTION_SIZE, kTileQuads - 1u);
    uint row = ((min(first + e / kQuads, last) % args.slots) * kv_rows + g * HEAD_DIM) / 4u + e % kQuads;
    staged_keys[i] = PROBE == 12u || PROBE == 13u ? vec4(float(row) * 1e-9) : Vec4sIn(args.k_cache).v[row];
    staged_values[i] = PROBE == 11u || PROBE == 13u ? vec4(float(row) * 1e-9) : Vec4sIn(args.v_cache).v[row];
  }
}
// ... into shared memory; the new token's rows (not in the cache yet) from k_new / v_new, in the
// range holding it (fresh_key: its position, else none).
void store_tile(uint first, uint fresh_key) {
  uint t = gl_LocalInvocationIndex;
  [[unroll]] for (uint i = 0u; i < kStaged; ++i) {
    uint e = t + i * DECODE_ATTENTION_SIZE;
    if (e >= kTileQuads) break;
    uint k = e / kQuads, q = e % kQuads;
    bool fresh = first + k == fresh_key;
    key_tile[k * kKeyStride + q] = fresh ? k_new[q] : staged_keys[i];
    vec4 v = fresh ? vec4(v_new[4u * q], v_new[4u * q + 1u], v_new[4u * q + 2u], v_new[4u * q + 3u]) : staged_values[i];
    uint at = k * HEAD_DIM + 4u * q;
    scratch[at] = v.x;
    scratch[at + 1u] = v.y;
    scratch[at + 2u] = v.z;
    scratch[at + 3u] = v.w;
  }
}

void main() {
  uint lane = gl_SubgroupInvocationID, sg = gl_SubgroupID;
  uint w = gl_WorkGroupID.x, s = gl_WorkGroupID.y, qh0 = w * GROUP, g = qh0 / args.group;
  uint kv_rows = args.kv_heads * HEAD_DIM;
  KeyRange r;
  if (!key_range(s, r)) return;
  // The first tile's rows load while the new Q and K rotate.
  stage_tile(r.begin, r.end - 1u, g, kv_rows);
  rotate_query_and_new_key(qh0, g, r);

  uint head_group = sg % kHeadGroups, part = sg / kHeadGroups;
  bool takes_heads = part < kParts;  // subgroups past kHeadGroups * kParts have no heads
  uint h0 = head_group * SUBGROUP_HEADS;
  [[unroll]] for (uint u = 0u; u < SUBGROUP_HEADS; ++u) {
    head_top[u] = -1.0 / 0.0;
    lane_sum[u] = 0.0;
    [[unroll]] for (uint i = 0u; i < kDimsPerLane; ++i) acc[u * kDimsPerLane + i] = 0.0;
  }
  for (uint tile = r.begin; tile < r.end; tile += kTileKeys) {
    barrier();  // the last tile read (and, the first time, q_rows, k_new, v_new written)
    store_tile(tile, r.end == r.position + 1u ? r.position : 0xFFFFFFFFu);
    barrier();
    uint next = tile + kTileKeys;
    if (next < r.end) stage_tile(next, r.end - 1u, g, kv_rows);  // in flight while this tile is used
    uint keys = min(kTileKeys, r.end - tile);
    if (!takes_heads) continue;
    for (uint block = part * S; block < keys; block += kParts * S) {
      uint k = block + lane;  // lane = key: the block's first key is in the tile, so maxima are finite
      float score[SUBGROUP_HEADS];
      [[unroll]] for (uint u = 0u; u < SUBGROUP_HEADS; ++u) score[u] = 0.0;
      uint row = min(k, kTileKeys - 1u) * kKeyStride;
      [[unroll]] for (uint d4 = 0u; d4 < kQuads; ++d4) {
        vec4 k4 = key_tile[row + d4];
        [[unroll]] for (uint u = 0u; u < SUBGROUP_HEADS; ++u) score[u] += dot(q_rows[(h0 + u) * kQuads + d4], k4);
      }
      float p[SUBGROUP_HEADS];
      [[unroll]] for (uint u = 0u; u < SUBGROUP_HEADS; ++u) {
        float x = k < keys ? score[u] * args.scale : -1.0 / 0.0;
        float new_max = max(head_top[u], subgroupMax(x));
        float rescale = exp(head_top[u] - new_max);
        p[u] = exp(x - new_max);
        head_top[u] = new_max;
        lane_sum[u] = lane_sum[u] * rescale + p[u];
        [[unroll]] for (uint i = 0u; i < kDimsPerLane; ++i) acc[u * kDimsPerLane + i] *= rescale;
      }
      // lane = dims: each key's value row, weighed by its probability (0 past the tile's keys,
      // whose rows repeat the range's last key).
      // Eight keys unrolled at a time (kValueUnroll): all S would hold every key's loads in registers at once
      // (150 registers on the H100: one workgroup per multiprocessor).
      for (uint k0 = 0u; k0 < S; k0 += kValueUnroll)
        [[unroll]] for (uint j = 0u; j < kValueUnroll; ++j) {
          uint kk = k0 + j;
          uint at = min(block + kk, kTileKeys - 1u) * HEAD_DIM;
          float v[kDimsPerLane];
          [[unroll]] for (uint i = 0u; i < kDimsPerLane; ++i) v[i] = scratch[at + min(lane + i * S, HEAD_DIM - 1u)];
          [[unroll]] for (uint u = 0u; u < SUBGROUP_HEADS; ++u) {
            float pk = subgroupShuffle(p[u], kk);
            [[unroll]] for (uint i = 0u; i < kDimsPerLane; ++i) acc[u * kDimsPerLane + i] += pk * v[i];
          }
        }
    }
  }
  // The heads this subgroup does not take: maximum -inf (weight 0 in the merge).
  float sums[SUBGROUP_HEADS];
  [[unroll]] for (uint u = 0u; u < SUBGROUP_HEADS; ++u) sums[u] = subgroupAdd(lane_sum[u]);
  [[unroll]] for (uint hh = 0u; hh < GROUP; ++hh) {
    run_max[hh] = -1.0 / 0.0;
    run_sum[hh] = 0.0;
    [[unroll]] for (uint u = 0u; u < SUBGROUP_HEADS; ++u)
      if (takes_heads && hh == h0 + u) {
        run_max[hh] = head_top[u];
        run_sum[hh] = sums[u];
      }
  }
  barrier();  // the last tile read: scratch is the merge's now
  merge_subgroups();
  finish_range(qh0, w, s, r);
}

// merge_subgroups' store of this subgroup's weighted values: lane = dims of its heads, 0 for the
// others.
void store_accumulators(uint at) {
  uint lane = gl_SubgroupInvocationID, sg = gl_SubgroupID;
  uint h0 = (sg % kHeadGroups) * SUBGROUP_HEADS;
  bool takes_heads = sg / kHeadGroups < kParts;
  [[unroll]] for (uint hh = 0u; hh < GROUP; ++hh)
    [[unroll]] for (uint i = 0u; i < kDimsPerLane; ++i) {
      uint d = lane + i * S;
      if (d >= HEAD_DIM) break;
      float value = 0.0;
      [[unroll]] for (uint u = 0u; u < SUBGROUP_HEADS; ++u)
        if (takes_heads && hh == h0 + u) value = acc[u * kDimsPerLane + i] * merge_weight[hh];
      scratch[at + hh * HEAD_DIM + d] = value;
    }
}

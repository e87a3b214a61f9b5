#version 450
#extension GL_GOOGLE_include_directive : require
// Decode attention of the token at step.position (flash-decoding; attention_decode.glsl: the
// ranges, the new token, the merges), the kernel of short contexts and the portable one: each
// subgroup takes its own blocks of SUBGROUP_SIZE keys with no workgroup barrier in the key loop:
// lane = key for the scores of the GROUP query heads (the key row in registers), an online softmax
// per head across the lanes, then lane = dims for the values (coalesced), the probabilities passed
// through shared memory. Query heads per workgroup: all of a KV head's by default, fewer to spread
// a short context over more workgroups (each then reads its KV head's keys and values itself).
#include "attention_decode.glsl"

// SPIR-V 1.5 (Vulkan 1.2) pipelines run in subgroups of the device's subgroupSize, which the
// launcher passes as SUBGROUP_SIZE: a constant here, so the key blocks unroll.
const uint S = SUBGROUP_SIZE;
const uint kDimsPerLane = (HEAD_DIM + S - 1u) / S;  // lane owns dims lane, lane + S, ...

vec4 key_row[kQuads];  // the lane's key row of the current block
float acc[GROUP * kDimsPerLane];
void load_key_row(uint j, uint g, uint kv_rows) {
  uint row = ((j % args.slots) * kv_rows + g * HEAD_DIM) >> 2;
  [[unroll]] for (uint d4 = 0u; d4 < kQuads; ++d4)
    key_row[d4] = PROBE == 12u || PROBE == 13u ? vec4(float(row + d4) * 1e-9) : Vec4sIn(args.k_cache).v[row + d4];
}

void main() {
  uint t = gl_LocalInvocationIndex, lane = gl_SubgroupInvocationID, sg = gl_SubgroupID;
  uint w = gl_WorkGroupID.x, s = gl_WorkGroupID.y, qh0 = w * GROUP, g = qh0 / args.group;
  uint kv_rows = args.kv_heads * HEAD_DIM;
  KeyRange r;
  if (!key_range(s, r)) return;
  uint begin = r.begin, end = r.end, position = r.position;

  // The first block's key rows, loading while the new Q and K rotate.
  uint block = begin + sg * S;
  if (block < end) load_key_row(min(block + lane, end - 1u), g, kv_rows);
  rotate_query_and_new_key(qh0, g, r);
  barrier();

  // Per subgroup and head: the running maximum (uniform), this lane's share of the sum, and the
  // weighted values of the lane's dims.
  float lane_sum[GROUP];
  [[unroll]] for (uint hh = 0u; hh < GROUP; ++hh) {
    run_max[hh] = -1.0 / 0.0;
    lane_sum[hh] = 0.0;
    [[unroll]] for (uint i = 0u; i < kDimsPerLane; ++i) acc[hh * kDimsPerLane + i] = 0.0;
  }
  uint probs = sg * GROUP * S;  // this subgroup's [GROUP, S] of scratch
  for (; block < end; block += DECODE_ATTENTION_SIZE) {
    uint j = block + lane;
    float score[GROUP];
    [[unroll]] for (uint hh = 0u; hh < GROUP; ++hh) score[hh] = 0.0;
    [[unroll]] for (uint d4 = 0u; d4 < kQuads; ++d4) {
      vec4 k4 = j == position ? k_new[d4] : key_row[d4];
      [[unroll]] for (uint hh = 0u; hh < GROUP; ++hh) score[hh] += dot(q_rows[hh * kQuads + d4], k4);
    }
    // The next block's key rows now: their loads overlap this block's softmax and values.
    uint next = block + DECODE_ATTENTION_SIZE;
    if (next < end) load_key_row(min(next + lane, end - 1u), g, kv_rows);
    subgroupBarrier();  // every lane has read the previous block's probabilities
    [[unroll]] for (uint hh = 0u; hh < GROUP; ++hh) {
      float x = j < end ? score[hh] * args.scale : -1.0 / 0.0;
      float new_max = max(run_max[hh], subgroupMax(x));  // finite: the block's first key is visible
      float rescale = exp(run_max[hh] - new_max);
      float p = exp(x - new_max);
      run_max[hh] = new_max;
      lane_sum[hh] = lane_sum[hh] * rescale + p;
      [[unroll]] for (uint i = 0u; i < kDimsPerLane; ++i) acc[hh * kDimsPerLane + i] *= rescale;
      scratch[probs + hh * S + lane] = p;
    }
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    // Keys past the range repeat its last key (probability 0), so every load is of a visible
    // key and none waits on a branch: the new key's cache slot is loaded too, then replaced by
    // the shared copy (a load under a condition would keep the loads of the block from
    // overlapping).
    uint last = min(S, end - block) - 1u;
    uint ring = block % args.slots;
    [[unroll]] for (uint k = 0u; k < S; ++k) {
      uint kk = min(k, last), slot = ring + kk;
      if (slot >= args.slots) slot -= args.slots;
      uint row = slot * kv_rows + g * HEAD_DIM;
      bool new_key = block + kk == position;
      float v[kDimsPerLane];
      [[unroll]] for (uint i = 0u; i < kDimsPerLane; ++i) {
        uint d = min(lane + i * S, HEAD_DIM - 1u);
        float cached = PROBE == 11u || PROBE == 13u ? float(row + d) * 1e-9 : FloatsIn(args.v_cache).v[row + d];
        v[i] = new_key ? v_new[d] : cached;
      }
      [[unroll]] for (uint hh = 0u; hh < GROUP; ++hh) {
        float p = scratch[probs + hh * S + k];
        [[unroll]] for (uint i = 0u; i < kDimsPerLane; ++i) acc[hh * kDimsPerLane + i] += p * v[i];
      }
    }
  }

  [[unroll]] for (uint hh = 0u; hh < GROUP; ++hh) run_sum[hh] = subgroupAdd(lane_sum[hh]);
  merge_subgroups();
  finish_range(qh0, w, s, r);
}

// merge_subgroups' store of this subgroup's weighted values: lane = dims.
void store_accumulators(uint at) {
  uint lane = gl_SubgroupInvocationID;
  [[unroll]] for (uint hh = 0u; hh < GROUP; ++hh)
    [[unroll]] for (uint i = 0u; i < kDimsPerLane; ++i) {
      uint d = lane + i * S;
      if (d < HEAD_DIM) scratch[at + hh * HEAD_DIM + d] = acc[hh * kDimsPerLane + i] * merge_weight[hh];
    }
}

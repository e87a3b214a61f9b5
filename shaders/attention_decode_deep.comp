#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_shuffle : require
// Decode attention over a long context (flash-decoding; attention_decode.glsl: ranges, the new
// token, the merge). Every key is read once per workgroup and used for all of its GROUP query heads
// (by default all of the KV head's), so the cache crosses the memory bus once per token:
// a subgroup takes KEY_SLOTS = SUBGROUP_SIZE / KEY_LANES keys at a time, KEY_LANES lanes per key
// each holding the quads c, c + KEY_LANES, ... of its key and value rows (the lanes of a key read
// its row in full 128-byte lines). A lane computes its part of the key's dot product with every
// query head (the query rows from shared memory), KEY_LANES lanes add them with shuffles, and it
// keeps an online softmax per head over its own keys (no reduction across keys in the loop) with
// the weighted values of its dims. The key rows of the next step load while this step's values are
// weighed, its value rows while its scores are computed. At the end each subgroup merges its key
// slots with shuffles, the subgroups merge in shared memory, the ranges as the other kernel's.
// The lane = key kernel (attention_decode.comp) holds a whole key row per lane and reads a KV
// head's cache once per query head pair; at 4096 keys it was a chain of ~1000 instructions per
// block of 32 keys at one workgroup per multiprocessor.
#include "attention_decode.glsl"
layout(constant_id = SPEC_ATTENTION_KEY_LANES) const uint KEY_LANES = 8u;
layout(constant_id = SPEC_ATTENTION_KEYS_PER_LANE) const uint KEYS_PER_LANE = 2u;

const uint S = SUBGROUP_SIZE;
const uint KEY_SLOTS = S / KEY_LANES;                 // keys a subgroup takes at once
const uint kQuadsPerLane = kQuads / KEY_LANES;        // the launcher: HEAD_DIM % (4 KEY_LANES) == 0
const uint kStepKeys = KEY_SLOTS * KEYS_PER_LANE;     // keys of one step of one subgroup
const uint kLaneValues = KEYS_PER_LANE * kQuadsPerLane;
const uint kAccumulators = GROUP * kQuadsPerLane;

uint lane_quad;  // c: the lane's first quad of a row
vec4 key_rows[kLaneValues], value_rows[kLaneValues];  // [KEYS_PER_LANE][kQuadsPerLane]
float lane_sum[GROUP];  // and run_max (attention_decode.glsl): the lane's online softmax per head
vec4 acc[kAccumulators];  // [GROUP][kQuadsPerLane]
// The step's: which of the lane's keys are in the range, their scores [GROUP][KEYS_PER_LANE].
bool valid[KEYS_PER_LANE];
float score[GROUP * KEYS_PER_LANE];

// The lane's keys of the step at `first`: first + b * KEY_SLOTS (the lane's slot added by the
// caller), past `last` repeating it (their probabilities are 0, and every load is of a cached key).
uint cache_row(uint j, uint g, uint kv_rows) { return ((j % args.slots) * kv_rows + g * HEAD_DIM) >> 2; }
void load_keys(uint first, uint last, uint g, uint kv_rows) {
  [[unroll]] for (uint b = 0u; b < KEYS_PER_LANE; ++b) {
    uint row = cache_row(min(first + b * KEY_SLOTS, last), g, kv_rows) + lane_quad;
    [[unroll]] for (uint i = 0u; i < kQuadsPerLane; ++i)
      key_rows[b * kQuadsPerLane + i] = PROBE == 12u || PROBE == 13u ? vec4(float(row + i) * 1e-9)
                                                                     : Vec4sIn(args.k_cache).v[row + i * KEY_LANES];
  }
}
void load_values(uint first, uint last, uint g, uint kv_rows) {
  [[unroll]] for (uint b = 0u; b < KEYS_PER_LANE; ++b) {
    uint row = cache_row(min(first + b * KEY_SLOTS, last), g, kv_rows) + lane_quad;
    [[unroll]] for (uint i = 0u; i < kQuadsPerLane; ++i)
      value_rows[b * kQuadsPerLane + i] = PROBE == 11u || PROBE == 13u ? vec4(float(row + i) * 1e-9)
                                                                       : Vec4sIn(args.v_cache).v[row + i * KEY_LANES];
  }
}

// The sum over the KEY_LANES lanes of a key (adjacent lanes).
float add_key_lanes(float x) {
  [[unroll]] for (uint m = 1u; m < KEY_LANES; m <<= 1u) x += subgroupShuffleXor(x, m);
  return x;
}

// The scores of the lane's KEYS_PER_LANE keys (key_rows) for every head, -inf where not `valid`.
void scores() {
  [[unroll]] for (uint hh = 0u; hh < GROUP; ++hh)
    [[unroll]] for (uint b = 0u; b < KEYS_PER_LANE; ++b) {
      float d = 0.0;
      [[unroll]] for (uint i = 0u; i < kQuadsPerLane; ++i)
        d += dot(q_rows[hh * kQuads + lane_quad + i * KEY_LANES], key_rows[b * kQuadsPerLane + i]);
      d = add_key_lanes(d);
      score[hh * KEYS_PER_LANE + b] = valid[b] ? d * args.scale : -1.0 / 0.0;
    }
}

// The lane's online softmax per head over its keys: rescale by the new maximum once per step, then
// add each key's probability and weighted value row (value_rows).
void weigh() {
  [[unroll]] for (uint hh = 0u; hh < GROUP; ++hh) {
    float top = run_max[hh];
    [[unroll]] for (uint b = 0u; b < KEYS_PER_LANE; ++b) top = max(top, score[hh * KEYS_PER_LANE + b]);
    float base = top == -1.0 / 0.0 ? 0.0 : top;  // -inf until the lane has a key: every weight 0, no NaN
    float rescale = exp(run_max[hh] - base);
    lane_sum[hh] *= rescale;
    [[unroll]] for (uint i = 0u; i < kQuadsPerLane; ++i) acc[hh * kQuadsPerLane + i] *= rescale;
    [[unroll]] for (uint b = 0u; b < KEYS_PER_LANE; ++b) {
      float p = exp(score[hh * KEYS_PER_LANE + b] - base);
      lane_sum[hh] += p;
      [[unroll]] for (uint i = 0u; i < kQuadsPerLane; ++i) acc[hh * kQuadsPerLane + i] += p * value_rows[b * kQuadsPerLane + i];
    }
    run_max[hh] = top;
  }
}

void main() {
  uint t = gl_LocalInvocationIndex, lane = gl_SubgroupInvocationID, sg = gl_SubgroupID;
  uint w = gl_WorkGroupID.x, s = gl_WorkGroupID.y, qh0 = w * GROUP, g = qh0 / args.group;
  uint kv_rows = args.kv_heads * HEAD_DIM;
  KeyRange r;
  if (!key_range(s, r)) return;
  lane_quad = lane % KEY_LANES;
  uint slot = lane / KEY_LANES;
  // The cached keys [begin, cached_end): all but the new token's, which the range holding it
  // weighs last from shared memory.
  uint cached_end = min(r.end, r.position);
  uint first = r.begin + sg * kStepKeys + slot;
  if (first < cached_end) {  // the first step's rows, loading while the new Q and K rotate
    load_keys(first, cached_end - 1u, g, kv_rows);
    load_values(first, cached_end - 1u, g, kv_rows);
  }
  rotate_query_and_new_key(qh0, g, r);
  barrier();

  [[unroll]] for (uint hh = 0u; hh < GROUP; ++hh) {
    run_max[hh] = -1.0 / 0.0;
    lane_sum[hh] = 0.0;
    [[unroll]] for (uint i = 0u; i < kQuadsPerLane; ++i) acc[hh * kQuadsPerLane + i] = vec4(0.0);
  }
  const uint stride = kSubgroups * kStepKeys;
  // Subgroup-uniform bounds (first - slot), so every lane takes the same steps and shuffles.
  for (uint step = first - slot; step < cached_end; step += stride) {
    [[unroll]] for (uint b = 0u; b < KEYS_PER_LANE; ++b) valid[b] = step + slot + b * KEY_SLOTS < cached_end;
    scores();
    uint next = step + stride;
    if (next < cached_end) load_keys(next + slot, cached_end - 1u, g, kv_rows);
    weigh();
    if (next < cached_end) load_values(next + slot, cached_end - 1u, g, kv_rows);
  }
  if (r.end == r.position + 1u && sg == 0u) {  // the new token, by the first lanes of subgroup 0
    [[unroll]] for (uint b = 0u; b < KEYS_PER_LANE; ++b) {
      valid[b] = b == 0u && slot == 0u;
      [[unroll]] for (uint i = 0u; i < kQuadsPerLane; ++i) {
        uint q = lane_quad + i * KEY_LANES;
        key_rows[b * kQuadsPerLane + i] = k_new[q];
        value_rows[b * kQuadsPerLane + i] = vec4(v_new[4u * q], v_new[4u * q + 1u], v_new[4u * q + 2u], v_new[4u * q + 3u]);
      }
    }
    scores();
    weigh();
  }

  // The subgroup's key slots merged (lanes lane ^ KEY_LANES, ...): every lane then holds its
  // quads' weighted values over all of the subgroup's keys, relative to the subgroup's maximum.
  [[unroll]] for (uint hh = 0u; hh < GROUP; ++hh) {
    float top = run_max[hh];
    [[unroll]] for (uint m = KEY_LANES; m < S; m <<= 1u) top = max(top, subgroupShuffleXor(top, m));
    float weight = run_max[hh] == -1.0 / 0.0 ? 0.0 : exp(run_max[hh] - top);  // 0 for a slot with no keys
    float sum = lane_sum[hh] * weight;
    [[unroll]] for (uint m = KEY_LANES; m < S; m <<= 1u) sum += subgroupShuffleXor(sum, m);
    [[unroll]] for (uint i = 0u; i < kQuadsPerLane; ++i) {
      vec4 a = acc[hh * kQuadsPerLane + i] * weight;
      [[unroll]] for (uint m = KEY_LANES; m < S; m <<= 1u) a += subgroupShuffleXor(a, m);
      acc[hh * kQuadsPerLane + i] = a;
    }
    run_max[hh] = top;
    run_sum[hh] = sum;
  }
  merge_subgroups();
  finish_range(qh0, w, s, r);
}

// merge_subgroups' store of this subgroup's weighted values: slot 0's lanes, their quads.
void store_accumulators(uint at) {
  if (gl_SubgroupInvocationID >= KEY_LANES) return;
  [[unroll]] for (uint hh = 0u; hh < GROUP; ++hh)
    [[unroll]] for (uint i = 0u; i < kQuadsPerLane; ++i) {
      uint d = 4u * (lane_quad + i * KEY_LANES);
      vec4 a = acc[hh * kQuadsPerLane + i] * merge_weight[hh];
      scratch[at + hh * HEAD_DIM + d] = a.x;
      scratch[at + hh * HEAD_DIM + d + 1u] = a.y;
      scratch[at + hh * HEAD_DIM + d + 2u] = a.z;
      scratch[at + hh * HEAD_DIM + d + 3u] = a.w;
    }
}

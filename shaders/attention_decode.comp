#version 450
#extension GL_GOOGLE_include_directive : require
// Decode attention of the token at step.position, one workgroup per (KV head g, key range s):
// RoPE of the new Q rows of the query heads of g (GQA: heads g*G .. g*G+G-1, G = heads/kv_heads)
// and of the new K row, the new K and V into the cache slot position % slots (by the workgroup
// whose range holds the position), then a softmax over the keys of range s (t-W < j <= t on
// sliding layers) kept as its maximum, its sum and its weighted V: the partials that
// attention_combine merges with the sink. Keys go 256 at a time: one key per invocation for the
// scores, one subgroup per head for the block's maximum and sum, outputs (head, dim) per
// invocation for the weighted V.
#include "common.glsl"
layout(local_size_x = REDUCE_WORKGROUP_SIZE) in;
layout(push_constant) uniform Push { AttentionDecodeArgs args; };

shared vec4 q_rows[kMaxAttentionGroupValues / 4u];  // [G, D], rotated
shared vec4 k_new[kMaxHeadDim / 4u];
shared float v_new[kMaxHeadDim];
shared float probs[kMaxHeadsPerKvHead * REDUCE_WORKGROUP_SIZE];  // [G, keys of the block]
shared float head_max[kMaxHeadsPerKvHead], head_sum[kMaxHeadsPerKvHead], head_rescale[kMaxHeadsPerKvHead];

const uint kOutputsPerInvocation = kMaxAttentionGroupValues / REDUCE_WORKGROUP_SIZE;

void main() {
  uint t = gl_LocalInvocationIndex;
  uint g = gl_WorkGroupID.x, s = gl_WorkGroupID.y;
  uint D = args.head_dim, half_dim = D / 2u, G = args.heads / args.kv_heads;
  uint kv_rows = args.kv_heads * D;
  uint position = WordsIn(args.step).v[0];
  uint first_key = (args.window != 0u && position + 1u > args.window) ? position + 1u - args.window : 0u;
  uint per_split = (position + 1u - first_key + args.splits - 1u) / args.splits;
  uint begin = min(first_key + s * per_split, position + 1u);
  uint end = min(begin + per_split, position + 1u);
  FloatsIn qkv = FloatsIn(args.qkv);

  for (uint p = t; p < G * half_dim; p += REDUCE_WORKGROUP_SIZE) {
    uint hh = p / half_dim, i = p % half_dim;
    vec2 cs = rope_cos_sin(args.inv_freq, position, i, args.concentration);
    uint base = (g * G + hh) * D;
    float a = qkv.v[base + i], b = qkv.v[base + i + half_dim];
    uint lo = hh * D + i, hi = lo + half_dim;
    q_rows[lo >> 2][lo & 3u] = a * cs.x - b * cs.y;
    q_rows[hi >> 2][hi & 3u] = b * cs.x + a * cs.y;
  }
  for (uint i = t; i < half_dim; i += REDUCE_WORKGROUP_SIZE) {
    vec2 cs = rope_cos_sin(args.inv_freq, position, i, args.concentration);
    uint base = (args.heads + g) * D;
    float a = qkv.v[base + i], b = qkv.v[base + i + half_dim];
    uint hi = i + half_dim;
    k_new[i >> 2][i & 3u] = a * cs.x - b * cs.y;
    k_new[hi >> 2][hi & 3u] = b * cs.x + a * cs.y;
  }
  for (uint i = t; i < D; i += REDUCE_WORKGROUP_SIZE) v_new[i] = qkv.v[(args.heads + args.kv_heads + g) * D + i];
  if (t < G) {
    head_max[t] = -1.0 / 0.0;
    head_sum[t] = 0.0;
  }
  barrier();
  if (begin <= position && position < end) {
    uint slot = (position % args.slots) * kv_rows + g * D;
    for (uint i = t; i < D; i += REDUCE_WORKGROUP_SIZE) {
      Floats(args.k_cache).v[slot + i] = k_new[i >> 2][i & 3u];
      Floats(args.v_cache).v[slot + i] = v_new[i];
    }
  }

  float acc[kOutputsPerInvocation];
  for (uint o = 0u; o < kOutputsPerInvocation; ++o) acc[o] = 0.0;
  for (uint block = begin; block < end; block += REDUCE_WORKGROUP_SIZE) {
    uint j = block + t;
    bool valid = j < end;
    float score[kMaxHeadsPerKvHead];
    [[unroll]] for (uint hh = 0u; hh < kMaxHeadsPerKvHead; ++hh) score[hh] = 0.0;
    if (valid) {
      bool is_new = j == position;
      uint row = (j % args.slots) * kv_rows + g * D;
      for (uint d = 0u; d < D; d += 4u) {
        vec4 k4 = is_new ? k_new[d >> 2] : Vec4sIn(args.k_cache).v[(row + d) >> 2];
        [[unroll]] for (uint hh = 0u; hh < kMaxHeadsPerKvHead; ++hh)
          if (hh < G) score[hh] += dot(q_rows[(hh * D + d) >> 2], k4);
      }
    }
    [[unroll]] for (uint hh = 0u; hh < kMaxHeadsPerKvHead; ++hh)
      if (hh < G) probs[hh * REDUCE_WORKGROUP_SIZE + t] = valid ? score[hh] * args.scale : -1.0 / 0.0;
    barrier();
    for (uint hh = gl_SubgroupID; hh < G; hh += gl_NumSubgroups) {
      float block_max = -1.0 / 0.0;
      for (uint i = gl_SubgroupInvocationID; i < REDUCE_WORKGROUP_SIZE; i += gl_SubgroupSize)
        block_max = max(block_max, probs[hh * REDUCE_WORKGROUP_SIZE + i]);
      float new_max = max(head_max[hh], subgroupMax(block_max));
      float sum = 0.0;
      for (uint i = gl_SubgroupInvocationID; i < REDUCE_WORKGROUP_SIZE; i += gl_SubgroupSize) {
        float p = exp(probs[hh * REDUCE_WORKGROUP_SIZE + i] - new_max);
        probs[hh * REDUCE_WORKGROUP_SIZE + i] = p;
        sum += p;
      }
      sum = subgroupAdd(sum);
      if (subgroupElect()) {
        float rescale = exp(head_max[hh] - new_max);
        head_rescale[hh] = rescale;
        head_sum[hh] = head_sum[hh] * rescale + sum;
        head_max[hh] = new_max;
      }
    }
    barrier();
    uint keys = min(REDUCE_WORKGROUP_SIZE, end - block);
    for (uint o = 0u; o < kOutputsPerInvocation; ++o) {
      uint output_index = t + o * REDUCE_WORKGROUP_SIZE;
      if (output_index >= G * D) break;
      uint hh = output_index / D, d = output_index % D;
      float sum = acc[o] * head_rescale[hh];
      for (uint i = 0u; i < keys; ++i) {
        uint key = block + i;
        float v = key == position ? v_new[d] : FloatsIn(args.v_cache).v[(key % args.slots) * kv_rows + g * D + d];
        sum += probs[hh * REDUCE_WORKGROUP_SIZE + i] * v;
      }
      acc[o] = sum;
    }
    barrier();
  }
  // Partials of head h, range s: [weighted V (D), maximum, sum].
  for (uint o = 0u; o < kOutputsPerInvocation; ++o) {
    uint output_index = t + o * REDUCE_WORKGROUP_SIZE;
    if (output_index >= G * D) break;
    uint hh = output_index / D, d = output_index % D;
    uint base = ((g * G + hh) * args.splits + s) * (D + 2u);
    Floats(args.partials).v[base + d] = acc[o];
    if (d == 0u) {
      Floats(args.partials).v[base + D] = head_max[hh];
      Floats(args.partials).v[base + D + 1u] = head_sum[hh];
    }
  }
}

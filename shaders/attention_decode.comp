#version 450
#extension GL_GOOGLE_include_directive : require
// Decode attention of the token at step.position over up to kAttentionSplits key ranges per KV
// head, so every multiprocessor has work. Workgroup (KV head g, range s) walks its range of the
// keys (t-W < j <= t on sliding layers) in blocks of K = DECODE_ATTENTION_SIZE / G keys against
// the G = heads/kv_heads query heads of g (GQA: h / G == g), one (head, key) pair per invocation,
// keeping an online softmax (maximum, sum, weighted V) per head. The rotated new Q and K rows are
// made here (RoPE, half-split pairs, YaRN tables), and the range holding the position stores the
// new K and V in its cache slot (position % slots, a ring on sliding layers). The last range of g
// to finish merges the ranges: with M the largest of the sink and their maxima, out =
// sum_s e^(m_s - M) V_s / (e^(sink - M) + sum_s e^(m_s - M) l_s), the sink's probability dropped,
// as the CPU engine; every range's weight is computed once, in parallel.
#include "common.glsl"
layout(local_size_x = DECODE_ATTENTION_SIZE) in;
layout(push_constant) uniform Push { AttentionDecodeArgs args; };

shared vec4 q_rows[kMaxAttentionGroupValues / 4u];  // [G, D], rotated
shared vec4 k_new[kMaxHeadDim / 4u];
shared float v_new[kMaxHeadDim];
shared float probs[DECODE_ATTENTION_SIZE];  // [G, K] of the current block
shared float head_max[kMaxHeadsPerKvHead], head_sum[kMaxHeadsPerKvHead], head_rescale[kMaxHeadsPerKvHead];
shared float range_weight[kMaxHeadsPerKvHead * kAttentionSplits];  // the merge: e^(m_s - M)
shared float head_denominator[kMaxHeadsPerKvHead];

const uint kOutputsPerInvocation = kMaxAttentionGroupValues / DECODE_ATTENTION_SIZE;

void main() {
  uint t = gl_LocalInvocationIndex;
  uint g = gl_WorkGroupID.x, s = gl_WorkGroupID.y;
  uint D = args.head_dim, half_dim = D / 2u, G = args.heads / args.kv_heads;
  uint K = DECODE_ATTENTION_SIZE / G;  // keys per block
  uint kv_rows = args.kv_heads * D;
  uint position = WordsIn(args.step).v[0];
  uint first_key = (args.window != 0u && position + 1u > args.window) ? position + 1u - args.window : 0u;
  uint per_range = (position + 1u - first_key + args.splits - 1u) / args.splits;
  uint begin = min(first_key + s * per_range, position + 1u);
  uint end = min(begin + per_range, position + 1u);
  FloatsIn qkv = FloatsIn(args.qkv);
  bool empty = begin >= end;
  if (!empty) {
    for (uint p = t; p < G * half_dim; p += DECODE_ATTENTION_SIZE) {
      uint hh = p / half_dim, i = p % half_dim;
      vec2 cs = rope_cos_sin(args.inv_freq, position, i, args.concentration);
      uint base = (g * G + hh) * D;
      float a = qkv.v[base + i], b = qkv.v[base + i + half_dim];
      uint lo = hh * D + i, hi = lo + half_dim;
      q_rows[lo >> 2][lo & 3u] = a * cs.x - b * cs.y;
      q_rows[hi >> 2][hi & 3u] = b * cs.x + a * cs.y;
    }
    if (end == position + 1u) {  // this range holds the new token
      for (uint i = t; i < half_dim; i += DECODE_ATTENTION_SIZE) {
        vec2 cs = rope_cos_sin(args.inv_freq, position, i, args.concentration);
        uint base = (args.heads + g) * D;
        float a = qkv.v[base + i], b = qkv.v[base + i + half_dim];
        float ra = a * cs.x - b * cs.y, rb = b * cs.x + a * cs.y;
        uint hi = i + half_dim;
        k_new[i >> 2][i & 3u] = ra;
        k_new[hi >> 2][hi & 3u] = rb;
        uint slot = (position % args.slots) * kv_rows + g * D;
        Floats(args.k_cache).v[slot + i] = ra;
        Floats(args.k_cache).v[slot + hi] = rb;
      }
      for (uint i = t; i < D; i += DECODE_ATTENTION_SIZE) {
        float v = qkv.v[(args.heads + args.kv_heads + g) * D + i];
        v_new[i] = v;
        Floats(args.v_cache).v[(position % args.slots) * kv_rows + g * D + i] = v;
      }
    }
  }
  if (t < G) {
    head_max[t] = -1.0 / 0.0;
    head_sum[t] = 0.0;
  }
  barrier();
  uint hh = t / K, key = t % K;
  float acc[kOutputsPerInvocation];
  for (uint o = 0u; o < kOutputsPerInvocation; ++o) acc[o] = 0.0;
  for (uint block = begin; block < end; block += K) {
    uint j = block + key;
    float score = -1.0 / 0.0;
    if (hh < G && j < end) {
      float dot_qk = 0.0;
      uint row = ((j % args.slots) * kv_rows + g * D) >> 2;
      for (uint d4 = 0u; d4 < D / 4u; ++d4) {
        vec4 k4 = j == position ? k_new[d4] : Vec4sIn(args.k_cache).v[row + d4];
        dot_qk += dot(q_rows[hh * (D / 4u) + d4], k4);
      }
      score = dot_qk * args.scale;
    }
    probs[t] = score;
    barrier();
    for (uint head = gl_SubgroupID; head < G; head += gl_NumSubgroups) {
      float m = -1.0 / 0.0;
      for (uint i = gl_SubgroupInvocationID; i < K; i += gl_SubgroupSize) m = max(m, probs[head * K + i]);
      float new_max = max(head_max[head], subgroupMax(m));
      float sum = 0.0;
      for (uint i = gl_SubgroupInvocationID; i < K; i += gl_SubgroupSize) {
        float p = exp(probs[head * K + i] - new_max);  // a block has a visible key: new_max is finite
        probs[head * K + i] = p;
        sum += p;
      }
      sum = subgroupAdd(sum);
      if (subgroupElect()) {
        float rescale = exp(head_max[head] - new_max);
        head_rescale[head] = rescale;
        head_sum[head] = head_sum[head] * rescale + sum;
        head_max[head] = new_max;
      }
    }
    barrier();
    uint keys = min(K, end - block);
    for (uint o = 0u; o < kOutputsPerInvocation; ++o) {
      uint output_index = t + o * DECODE_ATTENTION_SIZE;
      if (output_index >= G * D) break;
      uint head = output_index / D, d = output_index % D;
      float sum = acc[o] * head_rescale[head];
      // Eight keys' values loaded before any is used: the loads overlap instead of queueing.
      for (uint i0 = 0u; i0 < keys; i0 += 8u) {
        float v[8];
        [[unroll]] for (uint u = 0u; u < 8u; ++u) {
          uint kj = block + min(i0 + u, keys - 1u);
          v[u] = kj == position ? v_new[d] : FloatsIn(args.v_cache).v[(kj % args.slots) * kv_rows + g * D + d];
        }
        [[unroll]] for (uint u = 0u; u < 8u; ++u)
          if (i0 + u < keys) sum += probs[head * K + i0 + u] * v[u];
      }
      acc[o] = sum;
    }
    barrier();
  }
  for (uint o = 0u; o < kOutputsPerInvocation; ++o) {
    uint output_index = t + o * DECODE_ATTENTION_SIZE;
    if (output_index >= G * D) break;
    uint head = output_index / D, d = output_index % D;
    uint base = ((g * G + head) * args.splits + s) * (D + 2u);
    SharedFloats(args.partials).v[base + d] = acc[o];
    if (d == 0u) {
      SharedFloats(args.partials).v[base + D] = empty ? -1.0 / 0.0 : head_max[head];
      SharedFloats(args.partials).v[base + D + 1u] = empty ? 0.0 : head_sum[head];
    }
  }
  if (!arrive_last(args.counters, g, args.splits)) return;
  // The merge, by the last range: each (head, range) weight once, then every output.
  SharedFloats partials = SharedFloats(args.partials);
  for (uint e = t; e < G * args.splits; e += DECODE_ATTENTION_SIZE) {
    uint head = e / args.splits, r = e % args.splits;
    range_weight[e] = partials.v[((g * G + head) * args.splits + r) * (D + 2u) + D];  // its maximum, for now
  }
  barrier();
  for (uint head = gl_SubgroupID; head < G; head += gl_NumSubgroups) {
    uint h = g * G + head;
    float sink = FloatsIn(args.sinks).v[h];
    float top = sink;
    for (uint r = gl_SubgroupInvocationID; r < args.splits; r += gl_SubgroupSize) top = max(top, range_weight[head * args.splits + r]);
    top = subgroupMax(top);
    float denominator = 0.0;
    for (uint r = gl_SubgroupInvocationID; r < args.splits; r += gl_SubgroupSize) {
      float w = exp(range_weight[head * args.splits + r] - top);  // 0 for an empty range (maximum -inf)
      range_weight[head * args.splits + r] = w;
      denominator += partials.v[(h * args.splits + r) * (D + 2u) + D + 1u] * w;
    }
    denominator = subgroupAdd(denominator);
    if (subgroupElect()) head_denominator[head] = denominator + exp(sink - top);
  }
  barrier();
  for (uint o = 0u; o < kOutputsPerInvocation; ++o) {
    uint output_index = t + o * DECODE_ATTENTION_SIZE;
    if (output_index >= G * D) break;
    uint head = output_index / D, d = output_index % D;
    uint h = g * G + head;
    float sum = 0.0;
    for (uint r0 = 0u; r0 < args.splits; r0 += 8u) {  // eight ranges' loads in flight at once
      float part[8];
      [[unroll]] for (uint u = 0u; u < 8u; ++u)
        part[u] = partials.v[(h * args.splits + min(r0 + u, args.splits - 1u)) * (D + 2u) + d];
      [[unroll]] for (uint u = 0u; u < 8u; ++u)
        if (r0 + u < args.splits) sum += part[u] * range_weight[head * args.splits + r0 + u];
    }
    Floats(args.target).v[h * D + d] = sum / head_denominator[head];
  }
}

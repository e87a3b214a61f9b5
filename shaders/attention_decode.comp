#version 450
#extension GL_GOOGLE_include_directive : require
// Decode attention of the token at step.position, split over many small key ranges so every
// multiprocessor has work: workgroup (KV head g, range s) scores the K = DECODE_ATTENTION_SIZE / G
// keys of range s (of the keys t-W < j <= t on sliding layers) against the G = heads/kv_heads
// query heads of g (GQA: h / G == g), one (head, key) pair per invocation, and writes each head's
// partial softmax (maximum, sum, weighted V). The last range of g to finish merges them: with M
// the largest of the sink and the ranges' maxima, out = sum_s e^(m_s - M) V_s /
// (e^(sink - M) + sum_s e^(m_s - M) l_s), the sink's probability dropped, as the CPU engine.
// The rotated new Q rows and K row are made here (RoPE, half-split pairs, YaRN tables), and the
// workgroup whose range holds the position stores the new K and V in its cache slot
// (position % slots, a ring on sliding layers).
#include "common.glsl"
layout(local_size_x = DECODE_ATTENTION_SIZE) in;
layout(push_constant) uniform Push { AttentionDecodeArgs args; };

shared vec4 q_rows[kMaxAttentionGroupValues / 4u];  // [G, D], rotated
shared vec4 k_new[kMaxHeadDim / 4u];
shared float v_new[kMaxHeadDim];
shared float probs[DECODE_ATTENTION_SIZE];  // [G, K]
shared float head_max[kMaxHeadsPerKvHead], head_sum[kMaxHeadsPerKvHead];

const uint kOutputsPerInvocation = kMaxAttentionGroupValues / DECODE_ATTENTION_SIZE;

void main() {
  uint t = gl_LocalInvocationIndex;
  uint g = gl_WorkGroupID.x, s = gl_WorkGroupID.y;
  uint D = args.head_dim, half_dim = D / 2u, G = args.heads / args.kv_heads;
  uint K = DECODE_ATTENTION_SIZE / G;  // keys per range
  uint kv_rows = args.kv_heads * D;
  uint position = WordsIn(args.step).v[0];
  uint first_key = (args.window != 0u && position + 1u > args.window) ? position + 1u - args.window : 0u;
  uint begin = first_key + s * K;
  uint end = min(begin + K, position + 1u);
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
  barrier();
  // Scores: invocation t is (head t / K, key t % K).
  uint hh = t / K, key = t % K;
  uint j = begin + key;
  float score = -1.0 / 0.0;
  if (!empty && hh < G && j < end) {
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
  // Each head's maximum and sum over its K keys: one subgroup per head.
  for (uint head = gl_SubgroupID; head < G; head += gl_NumSubgroups) {
    float m = -1.0 / 0.0;
    for (uint i = gl_SubgroupInvocationID; i < K; i += gl_SubgroupSize) m = max(m, probs[head * K + i]);
    m = subgroupMax(m);
    float sum = 0.0;
    for (uint i = gl_SubgroupInvocationID; i < K; i += gl_SubgroupSize) {
      float p = m == -1.0 / 0.0 ? 0.0 : exp(probs[head * K + i] - m);
      probs[head * K + i] = p;
      sum += p;
    }
    sum = subgroupAdd(sum);
    if (subgroupElect()) {
      head_max[head] = m;
      head_sum[head] = sum;
    }
  }
  barrier();
  // Weighted V: invocation t owns outputs (head, dim) t, t + DECODE_ATTENTION_SIZE, ...
  uint keys = empty ? 0u : end - begin;
  for (uint o = 0u; o < kOutputsPerInvocation; ++o) {
    uint output_index = t + o * DECODE_ATTENTION_SIZE;
    if (output_index >= G * D) break;
    uint head = output_index / D, d = output_index % D;
    float acc = 0.0;
    for (uint i = 0u; i < keys; ++i) {
      uint kj = begin + i;
      float v = kj == position ? v_new[d] : FloatsIn(args.v_cache).v[(kj % args.slots) * kv_rows + g * D + d];
      acc += probs[head * K + i] * v;
    }
    uint base = ((g * G + head) * args.splits + s) * (D + 2u);
    SharedFloats(args.partials).v[base + d] = acc;
    if (d == 0u) {
      SharedFloats(args.partials).v[base + D] = empty ? -1.0 / 0.0 : head_max[head];
      SharedFloats(args.partials).v[base + D + 1u] = empty ? 0.0 : head_sum[head];
    }
  }
  if (!arrive_last(args.counters, g, args.splits)) return;
  SharedFloats partials = SharedFloats(args.partials);
  for (uint o = 0u; o < kOutputsPerInvocation; ++o) {
    uint output_index = t + o * DECODE_ATTENTION_SIZE;
    if (output_index >= G * D) break;
    uint head = output_index / D, d = output_index % D;
    uint h = g * G + head;
    float sink = FloatsIn(args.sinks).v[h];
    float top = sink;
    for (uint r = 0u; r < args.splits; ++r) top = max(top, partials.v[(h * args.splits + r) * (D + 2u) + D]);
    float denominator = exp(sink - top), sum = 0.0;
    for (uint r = 0u; r < args.splits; ++r) {
      uint base = (h * args.splits + r) * (D + 2u);
      float w = exp(partials.v[base + D] - top);  // 0 for an empty range (maximum -inf)
      denominator += partials.v[base + D + 1u] * w;
      sum += partials.v[base + d] * w;
    }
    Floats(args.target).v[h * D + d] = sum / denominator;
  }
}

#version 450
#extension GL_GOOGLE_include_directive : require
// Attention of one query position over the KV cache, one workgroup per query head:
// GQA kv head = h / (heads / kv_heads), scores q.k / sqrt(D) over keys t-W < j <= t on sliding
// layers (window W, 0 = all keys <= t), softmax with the head's sink as an extra term whose
// probability is dropped, then probabilities . V. Scores live in a device scratch row per head.
#include "dense_decode.glsl"
#include "workgroup_reduce.glsl"
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Q { float q[]; };
layout(std430, binding = 1) readonly buffer KCache { float k_cache[]; };
layout(std430, binding = 2) readonly buffer VCache { float v_cache[]; };
layout(std430, binding = 3) readonly buffer Sinks { uint sink_words[]; };
layout(std430, binding = 4) coherent buffer Scores { float scores[]; };  // [heads, capacity]
layout(std430, binding = 5) writeonly buffer Out { float out_values[]; };  // [heads * D]
layout(std430, binding = 6) readonly buffer Step { uint step[]; };  // [0] token, [1] position
layout(push_constant) uniform Push {
  uint heads; uint kv_heads; uint head_dim; uint window; uint sink_encoding; float scale; uint capacity;
} push;
DEFINE_DENSE_LOADER(load_sink, sink_words)

void main() {
  uint h = gl_WorkGroupID.x;
  uint t = gl_LocalInvocationIndex;
  uint position = step[1];
  uint kv_head = h / (push.heads / push.kv_heads);
  uint kv_rows = push.kv_heads * push.head_dim;
  uint first_key = (push.window != 0u && position + 1u > push.window) ? position + 1u - push.window : 0u;
  uint q_base = h * push.head_dim, k_offset = kv_head * push.head_dim, s_base = h * push.capacity;

  float local_max = -1.0 / 0.0;
  for (uint j = first_key + t; j <= position; j += 64u) {
    float dot_qk = 0.0;
    for (uint d = 0u; d < push.head_dim; ++d) dot_qk += q[q_base + d] * k_cache[j * kv_rows + k_offset + d];
    float score = push.scale * dot_qk;
    scores[s_base + j] = score;
    local_max = max(local_max, score);
  }
  float sink = load_sink(push.sink_encoding, h);
  float max_logit = max(workgroup_max(local_max), sink);

  float local_sum = 0.0;
  for (uint j = first_key + t; j <= position; j += 64u) {
    float p = exp(scores[s_base + j] - max_logit);
    scores[s_base + j] = p;
    local_sum += p;
  }
  float denominator = workgroup_sum(local_sum) + exp(sink - max_logit);
  memoryBarrierBuffer();
  barrier();

  for (uint d = t; d < push.head_dim; d += 64u) {
    float acc = 0.0;
    for (uint j = first_key; j <= position; ++j) acc += scores[s_base + j] * v_cache[j * kv_rows + k_offset + d];
    out_values[q_base + d] = acc / denominator;
  }
}

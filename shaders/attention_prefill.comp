#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_quad : require
// Prefill attention over a block of queries, online softmax (no scores scratch): workgroup
// (KV head g, query block b) owns ATTENTION_ROWS rows (query head, query): the G = heads/kv_heads
// query heads of g (GQA: h / G == g) times ATTENTION_ROWS / G queries, so K and V tiles are read
// once for all of them. Keys come ATTENTION_KEY_BLOCK at a time from the cache (slot j % slots),
// masked causally and to the sliding window (t-W < j <= t); the caches in ENCODING (f32 or f16).
// Four invocations per row (a quad): each scores 8 of the block's keys and owns a quarter of the row's output dims. The sink joins
// the denominator at the end, its probability dropped, as the CPU engine.
#include "common.glsl"
layout(local_size_x = 4 * ATTENTION_ROWS) in;
layout(push_constant) uniform Push { AttentionPrefillArgs args; };

shared vec4 k_tile[ATTENTION_KEY_BLOCK][kMaxPrefillHeadDim / 4u];
shared vec4 v_tile[ATTENTION_KEY_BLOCK][kMaxPrefillHeadDim / 4u];
shared float p_tile[ATTENTION_ROWS][ATTENTION_KEY_BLOCK + 1];

const uint kKeysPerInvocation = ATTENTION_KEY_BLOCK / 4u;
const uint kDims4PerInvocation = kMaxPrefillHeadDim / 16u;  // vec4s of the output per invocation

float quad_max(float v) {
  v = max(v, subgroupQuadSwapHorizontal(v));
  return max(v, subgroupQuadSwapVertical(v));
}
float quad_sum(float v) {
  v += subgroupQuadSwapHorizontal(v);
  return v + subgroupQuadSwapVertical(v);
}

void main() {
  uint t = gl_LocalInvocationIndex;
  uint r = t / 4u, part = t % 4u;
  uint g = gl_WorkGroupID.x;
  uint G = args.heads / args.kv_heads, D = args.head_dim, D4 = D / 4u;
  uint queries_per_block = ATTENTION_ROWS / G;
  uint hh = r % G, query = gl_WorkGroupID.y * queries_per_block + r / G;
  uint head = g * G + hh;
  uint start = WordsIn(args.step).v[0];
  bool valid_row = query < args.count;
  uint position = start + min(query, args.count - 1u);
  uint stride = (args.heads + 2u * args.kv_heads) * D;

  vec4 q[kMaxPrefillHeadDim / 4u];
  [[unroll]] for (uint i = 0u; i < kMaxPrefillHeadDim / 4u; ++i)
    q[i] = i < D4 ? Vec4sIn(args.qkv).v[(min(query, args.count - 1u) * stride + head * D) / 4u + i] : vec4(0.0);

  // Keys the block's queries may see.
  uint first_query = start + gl_WorkGroupID.y * queries_per_block;
  uint last_query = start + min(gl_WorkGroupID.y * queries_per_block + queries_per_block, args.count) - 1u;
  uint first_key = prefill_first_key_block(first_query, args.window, WordsIn(args.step).v[2]);

  float row_max = -1.0 / 0.0, row_sum = 0.0;
  vec4 o[kDims4PerInvocation];
  [[unroll]] for (uint i = 0u; i < kDims4PerInvocation; ++i) o[i] = vec4(0.0);
  for (uint block = first_key; block <= last_query; block += ATTENTION_KEY_BLOCK) {
    // K and V tiles: 2 vec4s of each per invocation.
    for (uint e = t; e < ATTENTION_KEY_BLOCK * D4; e += 4u * ATTENTION_ROWS) {
      uint key = e / D4, d4 = e % D4;
      uint j = block + key;
      vec4 kv = vec4(0.0), vv = vec4(0.0);
      if (j <= last_query) {
        uint row = KV_CACHE_ROW(j % args.slots, g, args.slots, D);
        kv = load_kv_quad(args.k_cache, row, 4u * d4);
        vv = load_kv_quad(args.v_cache, row, 4u * d4);
      }
      k_tile[key][d4] = kv;
      v_tile[key][d4] = vv;
    }
    barrier();
    float s[kKeysPerInvocation];
    float block_max = -1.0 / 0.0;
    [[unroll]] for (uint i = 0u; i < kKeysPerInvocation; ++i) {
      uint key = part * kKeysPerInvocation + i;
      uint j = block + key;
      bool visible = valid_row && j <= position && (args.window == 0u || j + args.window > position);
      float dot_qk = 0.0;
      [[unroll]] for (uint d4 = 0u; d4 < kMaxPrefillHeadDim / 4u; ++d4)
        if (d4 < D4) dot_qk += dot(q[d4], k_tile[key][d4]);
      s[i] = visible ? dot_qk * args.scale : -1.0 / 0.0;
      block_max = max(block_max, s[i]);
    }
    float new_max = max(row_max, quad_max(block_max));
    float rescale = new_max == -1.0 / 0.0 ? 1.0 : exp(row_max - new_max);
    float block_sum = 0.0;
    [[unroll]] for (uint i = 0u; i < kKeysPerInvocation; ++i) {
      float p = new_max == -1.0 / 0.0 ? 0.0 : exp(s[i] - new_max);
      p_tile[r][part * kKeysPerInvocation + i] = p;
      block_sum += p;
    }
    row_sum = row_sum * rescale + quad_sum(block_sum);
    row_max = new_max;
    barrier();
    [[unroll]] for (uint i = 0u; i < kDims4PerInvocation; ++i) {
      uint d4 = part * kDims4PerInvocation + i;
      if (d4 >= D4) break;
      vec4 sum = o[i] * rescale;
      for (uint key = 0u; key < ATTENTION_KEY_BLOCK; ++key) sum += p_tile[r][key] * v_tile[key][d4];
      o[i] = sum;
    }
    barrier();
  }
  if (!valid_row) return;
  float sink = FloatsIn(args.sinks).v[head];
  float top = max(row_max, sink);
  float scale_o = row_max == -1.0 / 0.0 ? 0.0 : exp(row_max - top);
  float denominator = row_sum * scale_o + exp(sink - top);
  uint out_base = (query * args.heads + head) * D / 4u;
  [[unroll]] for (uint i = 0u; i < kDims4PerInvocation; ++i) {
    uint d4 = part * kDims4PerInvocation + i;
    if (d4 >= D4) break;
    Vec4s(args.target).v[out_base + d4] = o[i] * scale_o / denominator;
  }
}

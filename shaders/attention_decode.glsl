// What the two decode attention kernels share (attention_decode.comp: lane = key of a block, for
// short contexts and narrow subgroups; attention_decode_deep.comp: lanes over (key, dims) with all
// of the workgroup's query heads per lane, for long contexts): the step's keys and the workgroup's
// range of them, the rotated query rows and the new key and value in shared memory (the new token's
// K and V into the cache), and the end: the range's output, or its partial and, by the last range
// of the workgroup column to finish, the merge of the ranges with the sinks in one pass with a
// running maximum: with M the largest of the sink and their maxima, out = sum_s e^(m_s - M) V_s /
// (e^(sink - M) + sum_s e^(m_s - M) l_s), the sink's probability dropped, as the CPU engine.
//
// Workgroup (w, s): query heads qh0 = w * GROUP .. qh0 + GROUP - 1 of KV head g = qh0 / group (GQA:
// h / group == g), keys of range s. The dispatch is recorded once for every position; workgroups
// past the ranges the position needs return at once.
#include "common.glsl"
layout(local_size_x = DECODE_ATTENTION_SIZE) in;
layout(push_constant) uniform Push { AttentionDecodeArgs args; };
// The shape as constants, so the per-lane arrays live in registers at their exact size.
layout(constant_id = SPEC_ATTENTION_GROUP) const uint GROUP = 1u;
layout(constant_id = SPEC_ATTENTION_HEAD_DIM) const uint HEAD_DIM = 64u;

const uint kQuads = HEAD_DIM / 4u;
const uint kGroupValues = GROUP * HEAD_DIM;
const uint kOutputsPerInvocation = (kGroupValues + DECODE_ATTENTION_SIZE - 1u) / DECODE_ATTENTION_SIZE;

const uint kSubgroups = DECODE_ATTENTION_SIZE / SUBGROUP_SIZE;
const uint kScratch = 2u * kMaxAttentionGroupValues;
const uint kMergeSlots = kScratch / kGroupValues;  // subgroups' accumulators merged at once (>= 2)

shared vec4 q_rows[GROUP * kQuads];  // [GROUP, HEAD_DIM], rotated
shared vec4 k_new[kQuads];           // the new token's key (rotated) and value, in the range holding it
shared float v_new[HEAD_DIM];
shared float head_max[GROUP], head_sum[GROUP];  // the range's, per query head
// The subgroup merge: up to kMergeSlots subgroups' weighted values [GROUP, HEAD_DIM] (a kernel may
// use it in its key loop too), each subgroup's maximum and sum per head.
shared float scratch[kScratch];
shared float subgroup_max[kSubgroups * GROUP], subgroup_sums[kSubgroups * GROUP];

// Per invocation, and passed through these rather than as arguments (arrays sized by
// specialization constants do not pass through function parameters reliably: lavapipe read NaN):
// each subgroup's per head, uniform in it: the running maximum and the sum of probabilities
// relative to it, which the kernel sets before merge_subgroups; the weights store_accumulators
// applies; and the range's weighted values of this invocation's outputs (finish_range).
float run_max[GROUP], run_sum[GROUP], merge_weight[GROUP];
float total[kOutputsPerInvocation];

struct KeyRange {
  uint position;  // the new token's, the last key
  uint ranges;    // ranges the position's keys are cut into
  uint begin, end;  // this workgroup's keys [begin, end)
};

// This workgroup's keys at the step's position; false where it has none (the other dispatch's
// position, or a range past the keys).
bool key_range(uint s, out KeyRange r) {
  r.position = WordsIn(args.step).v[0];
  uint first_key = (args.window != 0u && r.position + 1u > args.window) ? r.position + 1u - args.window : 0u;
  uint keys = r.position + 1u - first_key;
  if (keys < args.min_keys || keys > args.max_keys) return false;
  // Ranges of at least args.range_keys keys (fewer, longer ranges cost less to merge), at most
  // the `splits` workgroup rows dispatched.
  r.ranges = min(args.splits, (keys + args.range_keys - 1u) / args.range_keys);
  if (s >= r.ranges) return false;
  uint per_range = (keys + r.ranges - 1u) / r.ranges;
  r.begin = min(first_key + s * per_range, r.position + 1u);
  r.end = min(r.begin + per_range, r.position + 1u);
  return true;
}

// q_rows: the GROUP query rows from qh0 rotated (RoPE, half-split pairs, YaRN tables). In the range
// holding the new token also k_new / v_new, which it reads from shared memory (its cache store is
// not visible to the other invocations without a buffer barrier); of the KV head's workgroups with
// this range the first (qh0 % group == 0) stores them in the cache slot (position % slots, a ring on
// sliding layers), the others compute the same rows for themselves. The caller's barrier follows.
void rotate_query_and_new_key(uint qh0, uint g, KeyRange r) {
  uint t = gl_LocalInvocationIndex, half_dim = HEAD_DIM / 2u, kv_rows = args.kv_heads * HEAD_DIM;
  uint heads = args.kv_heads * args.group;
  FloatsIn qkv = FloatsIn(args.qkv);
  for (uint p = t; p < GROUP * half_dim; p += DECODE_ATTENTION_SIZE) {
    uint hh = p / half_dim, i = p % half_dim;
    vec2 cs = rope_cos_sin(args.inv_freq, r.position, i, args.concentration);
    uint base = (qh0 + hh) * HEAD_DIM;
    float a = qkv.v[base + i], b = qkv.v[base + i + half_dim];
    uint lo = hh * HEAD_DIM + i, hi = lo + half_dim;
    q_rows[lo >> 2][lo & 3u] = a * cs.x - b * cs.y;
    q_rows[hi >> 2][hi & 3u] = b * cs.x + a * cs.y;
  }
  if (r.end != r.position + 1u) return;
  bool stores = qh0 % args.group == 0u;
  uint slot = (r.position % args.slots) * kv_rows + g * HEAD_DIM;
  for (uint i = t; i < half_dim; i += DECODE_ATTENTION_SIZE) {
    vec2 cs = rope_cos_sin(args.inv_freq, r.position, i, args.concentration);
    uint base = (heads + g) * HEAD_DIM;
    float a = qkv.v[base + i], b = qkv.v[base + i + half_dim];
    float ra = a * cs.x - b * cs.y, rb = b * cs.x + a * cs.y;
    uint hi = i + half_dim;
    k_new[i >> 2][i & 3u] = ra;
    k_new[hi >> 2][hi & 3u] = rb;
    if (stores) {
      Floats(args.k_cache).v[slot + i] = ra;
      Floats(args.k_cache).v[slot + hi] = rb;
    }
  }
  for (uint i = t; i < HEAD_DIM; i += DECODE_ATTENTION_SIZE) {
    float v = qkv.v[(heads + args.kv_heads + g) * HEAD_DIM + i];
    v_new[i] = v;
    if (stores) Floats(args.v_cache).v[slot + i] = v;
  }
}

// Each kernel's: its subgroup's weighted values of head hh, dim d, times merge_weight[hh], into
// scratch[at + hh * HEAD_DIM + d] (every dim of every head, by whichever lanes hold them).
void store_accumulators(uint at);

// The range's result from its subgroups' run_max (-inf where a subgroup had no keys) and run_sum
// per head, the weighted values through store_accumulators: head_max, head_sum and total as
// finish_range takes them. Every invocation calls it.
void merge_subgroups() {
  uint t = gl_LocalInvocationIndex, sg = gl_SubgroupID;
  if (subgroupElect())
    [[unroll]] for (uint hh = 0u; hh < GROUP; ++hh) {
      subgroup_max[sg * GROUP + hh] = run_max[hh];
      subgroup_sums[sg * GROUP + hh] = run_sum[hh];
    }
  barrier();
  // Each subgroup's values weighed by e^(its maximum - the range's).
  [[unroll]] for (uint hh = 0u; hh < GROUP; ++hh) {
    float top = -1.0 / 0.0;
    for (uint i = 0u; i < kSubgroups; ++i) top = max(top, subgroup_max[i * GROUP + hh]);
    merge_weight[hh] = run_max[hh] == -1.0 / 0.0 ? 0.0 : exp(run_max[hh] - top);
    if (t == hh) {
      float sum = 0.0;
      for (uint i = 0u; i < kSubgroups; ++i) {
        float m = subgroup_max[i * GROUP + hh];
        if (m != -1.0 / 0.0) sum += subgroup_sums[i * GROUP + hh] * exp(m - top);
      }
      head_max[hh] = top;
      head_sum[hh] = sum;
    }
  }
  [[unroll]] for (uint o = 0u; o < kOutputsPerInvocation; ++o) total[o] = 0.0;
  for (uint first = 0u; first < kSubgroups; first += kMergeSlots) {
    if (sg >= first && sg < first + kMergeSlots) store_accumulators((sg - first) * kGroupValues);
    barrier();
    uint held = min(kMergeSlots, kSubgroups - first);
    [[unroll]] for (uint o = 0u; o < kOutputsPerInvocation; ++o) {
      uint e = t + o * DECODE_ATTENTION_SIZE;
      if (e < kGroupValues)
        for (uint c = 0u; c < held; ++c) total[o] += scratch[c * kGroupValues + e];
    }
    barrier();  // scratch free for the next subgroups; head_max and head_sum visible
  }
}

// The range's result: total[o] the weighted values of output e = t + o * DECODE_ATTENTION_SIZE
// (head e / HEAD_DIM of the workgroup's, dim e % HEAD_DIM) relative to head_max, head_sum the sum
// of its probabilities. A single range writes the output with the sink; otherwise the partial, and
// the last range of column w to arrive merges them all.
void finish_range(uint qh0, uint w, uint s, KeyRange r) {
  uint t = gl_LocalInvocationIndex;
  if (r.ranges == 1u) {
    [[unroll]] for (uint o = 0u; o < kOutputsPerInvocation; ++o) {
      uint e = t + o * DECODE_ATTENTION_SIZE;
      if (e >= kGroupValues) break;
      uint hh = e / HEAD_DIM, h = qh0 + hh;
      float sink = FloatsIn(args.sinks).v[h];
      float top = max(head_max[hh], sink), weight = exp(head_max[hh] - top);
      Floats(args.target).v[h * HEAD_DIM + e % HEAD_DIM] = total[o] * weight / (head_sum[hh] * weight + exp(sink - top));
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
  if (PROBE == 14u || !arrive_last(args.counters, w, r.ranges)) return;
  // In one pass over the ranges with a running maximum: every range's maximum, sum and value of the
  // output are loaded at once (16 ranges' worth in flight), so the merge costs one round trip to
  // the L2 cache per 16 ranges, not one per quantity.
  [[unroll]] for (uint o = 0u; o < kOutputsPerInvocation; ++o) {
    uint e = t + o * DECODE_ATTENTION_SIZE;
    if (e >= kGroupValues) break;
    uint hh = e / HEAD_DIM, d = e % HEAD_DIM, h = qh0 + hh;
    float top = -1.0 / 0.0, denominator = 0.0, sum = 0.0;
    for (uint r0 = 0u; r0 < r.ranges; r0 += 16u) {
      float range_max[16], range_sum[16], range_value[16];
      [[unroll]] for (uint u = 0u; u < 16u; ++u) {
        uint base = (h * args.splits + min(r0 + u, r.ranges - 1u)) * (HEAD_DIM + 2u);
        range_max[u] = partials.v[base + HEAD_DIM];
        range_sum[u] = partials.v[base + HEAD_DIM + 1u];
        range_value[u] = partials.v[base + d];
      }
      [[unroll]] for (uint u = 0u; u < 16u; ++u) {
        if (r0 + u >= r.ranges) break;
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

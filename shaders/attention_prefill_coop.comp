#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_quad : require
// attention_prefill.comp on cooperative matrices (flash attention 2; the same arguments, grid and
// rows; ATTENTION_COOP_ROWS of them a workgroup): workgroup (KV head g, query block b) owns
// ATTENTION_COOP_ROWS rows (query head, query), the G query heads of g times ATTENTION_COOP_ROWS / G
// queries, and streams the keys and values it may see (causal, and only the sliding window's blocks)
// once, ATTENTION_KEY_BLOCK at a time, through shared memory: each block's loads, in registers
// through the previous block's work, and its split into parts serve 16 queries of gpt-oss's group
// of 8 query heads. Eight subgroups of 32 own ATTENTION_COOP_SUBGROUP_ROWS rows each; per key block a
// subgroup computes its scores S = Q K^T on the matrix units, takes them through shared memory for
// the online softmax (f32: max, exp, running sum, masks, two lanes per row), and adds P V on the
// matrix units to its output, which stays in accumulators: the rows' rescale by exp(old max - new
// max) is a division by a matrix of exp(new max - old max) per row (the matrices' layout is the
// device's, so a per-row factor goes in as a matrix, loaded column-major with a stride of 0 from one
// float per row; they divide but do not multiply elementwise).
//
// Precision: the products in fresh f32 accumulators per block (head_dim deep for S, one key block
// for P V), added to the f32 sums once per block, from f16 parts of the f32 operands, each part cut
// to 11 significant bits by a mask (exact in f16) and the rest scaled by COOP_LO_SCALE:
//   P V as the GEMMs' COOP_PROMOTED (coop_tile.glsl): V and P as hi + lo, hi.hi + (lo.hi + hi.lo) /
//     COOP_LO_SCALE, about 21 bits; P (at most 1) first scaled by ATTENTION_P_SCALE so that its
//     small probabilities stay out of f16's subnormals;
//   S = Q K^T from three parts of each (hi, mid, lo: 33 bits), hi.hi + (hi.mid + mid.hi) / s +
//     (mid.mid + hi.lo + lo.hi) / s^2 (s = COOP_LO_SCALE): the softmax turns an absolute error of a
//     score into a relative error of its weight, and two parts keep about 21 bits relative to the
//     sum of the products' magnitudes, which a score's cancellation can make far larger than the
//     score; three keep f32's. With them each layer's error against cpu-f64 is the f32 kernel's.
// An f16 cache's keys and values are exact in f16: their further parts' products are skipped.
// At PRECISION == COOP_FAST (VulkanTuning::attention_precision=fast) Q, K, P and V are each one f16
// part, rounded to nearest: one product per score and per weighted value, an error of f16's
// precision (as llama.cpp's flash attention), an explicit option, never the default.
#include "common.glsl"
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = ATTENTION_COOP_SIZE) in;
layout(push_constant) uniform Push { AttentionPrefillArgs args; };

layout(constant_id = SPEC_COOP_M) const uint lM = 16u;
layout(constant_id = SPEC_COOP_N) const uint lN = 16u;
layout(constant_id = SPEC_COOP_K) const uint lK = 16u;
layout(constant_id = SPEC_COOP_PRECISION) const uint PRECISION = COOP_PRECISE;
// Nested selects, not &&: glslang 12 miscompiles && between specialization constants.
const bool kSplitQP = PRECISION != COOP_FAST;  // Q's and P's further parts
const bool kSplitKV = kSplitQP ? ENCODING != ENC_F16 : false;

const uint kRows = ATTENTION_COOP_SUBGROUP_ROWS;  // a subgroup's rows
const uint kKeys = ATTENTION_KEY_BLOCK;
const uint kDims = ATTENTION_COOP_DIMS;  // head_dim padded with zeros to this
#if ATTENTION_KEY_BLOCK != 32 || ATTENTION_COOP_SUBGROUP_ROWS != 16 || ATTENTION_COOP_DIMS % 16 != 0 || \
    ATTENTION_COOP_ROWS % 2 != 0
#error "attention_prefill_coop.comp: written for 16 rows per subgroup of 32 and 32 keys per block"
#endif

// Shared memory in uvec4s (8 halves or 4 floats), rows skewed by one uvec4 (ATTENTION_COOP_SHARED_BYTES):
//   the workgroup's tiles: K hi, K mid, K lo, V hi, V lo [kKeys][kDims halves]; the f32 output
//     [ATTENTION_COOP_ROWS][kDims floats] lies over all of shared memory after the last block, and
//     Q's hi, mid and lo [ATTENTION_COOP_ROWS / 2][kDims halves] before the first, one half of the
//     rows after the other (the launcher checks that both fit);
//   per subgroup: S [kRows][kKeys floats], and P hi, P lo [kRows][kKeys halves] over it (written
//     once every lane has its scores), then the rescale [kRows floats] (row r: exp(new max - old
//     max) of row r).
const uint kHalfRow = kDims / 8u + 1u;    // a row of kDims halves
const uint kKvTile = kKeys * kHalfRow;
const uint kFloatRow = kDims / 4u + 1u;   // a row of kDims floats
const uint kSRow = kKeys / 4u + 1u;
const uint kPRow = kKeys / 8u + 1u;
const uint kSPQuads = max(ATTENTION_COOP_S_QUADS, ATTENTION_COOP_P_QUADS);
const uint kSubgroupQuads = ATTENTION_COOP_SUBGROUP_QUADS;
const uint kTileQuads = ATTENTION_COOP_TILE_QUADS;
shared uvec4 tiles[ATTENTION_COOP_SHARED_BYTES / 16];

const uint kKHi = 0u, kKMid = kKvTile, kKLo = 2u * kKvTile, kVHi = 3u * kKvTile, kVLo = 4u * kKvTile;
// Q's three parts of half the rows before the first block, over the whole of shared memory.
const uint kQHalfRows = ATTENTION_COOP_ROWS / 2u;
const uint kQParts = kQHalfRows * kHalfRow;
uint s_at() { return kTileQuads + gl_SubgroupID * kSubgroupQuads; }
uint p_hi_at() { return s_at(); }
uint p_lo_at() { return p_hi_at() + kRows * kPRow; }
uint r_at() { return s_at() + kSPQuads; }

#define HALF_MAT(R, C) fcoopmatNV<16, gl_ScopeSubgroup, R, C>
#define FLOAT_MAT fcoopmatNV<32, gl_ScopeSubgroup, lM, lN>

// hi: v cut to f16's 11 significant bits by a mask (not a round trip through packHalf2x16, which
// NVIDIA's compiler folds away); lo: the rest times COOP_LO_SCALE.
uvec4 halves8(vec4 a, vec4 b) {
  return uvec4(packHalf2x16(a.xy), packHalf2x16(a.zw), packHalf2x16(b.xy), packHalf2x16(b.zw));
}
vec4 cut11(vec4 v) { return uintBitsToFloat(floatBitsToUint(v) & uvec4(0xFFFFE000u)); }
// Three parts: hi, mid = the rest cut (times COOP_LO_SCALE), lo = what remains (times its square).
void split3(vec4 a, vec4 b, out uvec4 hi, out uvec4 mid, out uvec4 lo) {
  vec4 ha = cut11(a), hb = cut11(b);
  vec4 ra = (a - ha) * COOP_LO_SCALE, rb = (b - hb) * COOP_LO_SCALE;
  vec4 ma = cut11(ra), mb = cut11(rb);
  hi = halves8(ha, hb);
  mid = halves8(ma, mb);
  lo = halves8((ra - ma) * COOP_LO_SCALE, (rb - mb) * COOP_LO_SCALE);
}
void split8(vec4 a, vec4 b, out uvec4 hi, out uvec4 lo) {
  vec4 ha = uintBitsToFloat(floatBitsToUint(a) & uvec4(0xFFFFE000u));
  vec4 hb = uintBitsToFloat(floatBitsToUint(b) & uvec4(0xFFFFE000u));
  hi = uvec4(packHalf2x16(ha.xy), packHalf2x16(ha.zw), packHalf2x16(hb.xy), packHalf2x16(hb.zw));
  vec4 la = (a - ha) * COOP_LO_SCALE, lb = (b - hb) * COOP_LO_SCALE;
  lo = uvec4(packHalf2x16(la.xy), packHalf2x16(la.zw), packHalf2x16(lb.xy), packHalf2x16(lb.zw));
}

void subgroup_sync() {
  subgroupMemoryBarrierShared();
  subgroupBarrier();
}

// This invocation's share of a key block: keys (t / 8) and (t / 8 + 16), dims (t % 8) * 8 .. + 8.
const uint kKvItems = kKeys * (kDims / 8u) / ATTENTION_COOP_SIZE;
void load_kv(uint block, uint last_query, uint g, out vec4 k[2u * kKvItems], out vec4 v[2u * kKvItems]) {
  uint D = args.head_dim;
  [[unroll]] for (uint i = 0u; i < kKvItems; ++i) {
    uint e = gl_LocalInvocationIndex + i * ATTENTION_COOP_SIZE;
    uint key = e / (kDims / 8u), d = (e % (kDims / 8u)) * 8u;
    uint j = block + key;
    uint row = KV_CACHE_ROW(j % args.slots, g, args.slots, D);
    bool in0 = j <= last_query && d < D, in1 = j <= last_query && d + 4u < D;
    k[2u * i] = in0 ? load_kv_quad(args.k_cache, row, d) : vec4(0.0);
    v[2u * i] = in0 ? load_kv_quad(args.v_cache, row, d) : vec4(0.0);
    k[2u * i + 1u] = in1 ? load_kv_quad(args.k_cache, row, d + 4u) : vec4(0.0);
    v[2u * i + 1u] = in1 ? load_kv_quad(args.v_cache, row, d + 4u) : vec4(0.0);
  }
}
void store_kv(vec4 k[2u * kKvItems], vec4 v[2u * kKvItems]) {
  [[unroll]] for (uint i = 0u; i < kKvItems; ++i) {
    uint e = gl_LocalInvocationIndex + i * ATTENTION_COOP_SIZE;
    uint at = (e / (kDims / 8u)) * kHalfRow + e % (kDims / 8u);
    if (!kSplitQP) {
      tiles[kKHi + at] = halves8(k[2u * i], k[2u * i + 1u]);
      tiles[kVHi + at] = halves8(v[2u * i], v[2u * i + 1u]);
      continue;
    }
    uvec4 hi, mid, lo;
    split3(k[2u * i], k[2u * i + 1u], hi, mid, lo);
    tiles[kKHi + at] = hi;
    tiles[kKMid + at] = mid;
    tiles[kKLo + at] = lo;
    split8(v[2u * i], v[2u * i + 1u], hi, lo);
    tiles[kVHi + at] = hi;
    tiles[kVLo + at] = lo;
  }
}

void main() {
  uint g = gl_WorkGroupID.x;
  uint G = args.heads / args.kv_heads, D = args.head_dim;
  uint queries_per_block = ATTENTION_COOP_ROWS / G;
  uint start = WordsIn(args.step).v[0];
  uint stride = (args.heads + 2u * args.kv_heads) * D;
  uint first_query = start + gl_WorkGroupID.y * queries_per_block;
  uint last_query = start + min(gl_WorkGroupID.y * queries_per_block + queries_per_block, args.count) - 1u;
  uint first_key = prefill_first_key_block(first_query, args.window, WordsIn(args.step).v[2]);

  // Q as halves into the tiles (row r: query head r % G of query r / G), half the rows at a time,
  // then into the matrices of the subgroups that own them.
  uint sub_row = gl_SubgroupID * kRows;
  HALF_MAT(lM, lK) q_hi[kRows / lM][kDims / lK], q_mid[kRows / lM][kDims / lK], q_lo[kRows / lM][kDims / lK];
  [[unroll]] for (uint half_rows = 0u; half_rows < ATTENTION_COOP_ROWS; half_rows += kQHalfRows) {
    if (half_rows > 0u) barrier();  // the first half's subgroups have their Q out of the tiles
    for (uint e = gl_LocalInvocationIndex; e < kQHalfRows * (kDims / 8u); e += ATTENTION_COOP_SIZE) {
      uint r = e / (kDims / 8u), d = (e % (kDims / 8u)) * 8u;
      uint row = half_rows + r;
      uint query = gl_WorkGroupID.y * queries_per_block + row / G;
      uint at = (query * stride + (g * G + row % G) * D + d) / 4u;
      bool in_row = query < args.count;
      vec4 a = in_row && d < D ? Vec4sIn(args.qkv).v[at] : vec4(0.0);
      vec4 b = in_row && d + 4u < D ? Vec4sIn(args.qkv).v[at + 1u] : vec4(0.0);
      if (!kSplitQP) {
        tiles[r * kHalfRow + d / 8u] = halves8(a, b);
        continue;
      }
      uvec4 hi, mid, lo;
      split3(a, b, hi, mid, lo);
      tiles[r * kHalfRow + d / 8u] = hi;
      tiles[kQParts + r * kHalfRow + d / 8u] = mid;
      tiles[2u * kQParts + r * kHalfRow + d / 8u] = lo;
    }
    barrier();
    if (sub_row >= half_rows && sub_row < half_rows + kQHalfRows)
      [[unroll]] for (uint i = 0u; i < kRows / lM; ++i)
        [[unroll]] for (uint k = 0u; k < kDims / lK; ++k) {
          uint at = (sub_row - half_rows + i * lM) * kHalfRow + k * lK / 8u;
          coopMatLoadNV(q_hi[i][k], tiles, at, kHalfRow, false);
          if (kSplitQP) {
            coopMatLoadNV(q_mid[i][k], tiles, kQParts + at, kHalfRow, false);
            coopMatLoadNV(q_lo[i][k], tiles, 2u * kQParts + at, kHalfRow, false);
          }
        }
  }
  FLOAT_MAT o[kRows / lM][kDims / lN];
  [[unroll]] for (uint i = 0u; i < kRows / lM; ++i)
    [[unroll]] for (uint n = 0u; n < kDims / lN; ++n) o[i][n] = FLOAT_MAT(0.0);

  // The softmax's lanes: two per row (lane & 1 the half of the block's keys).
  uint lane = gl_SubgroupInvocationID, my_row = lane / 2u, half_keys = (lane % 2u) * (kKeys / 2u);
  uint my_query = gl_WorkGroupID.y * queries_per_block + (sub_row + my_row) / G;
  bool valid_row = my_query < args.count;
  uint position = start + my_query;
  float row_max = -1.0 / 0.0, row_sum = 0.0;

  // Each block's loads are in flight through the previous block's work: with one workgroup on a
  // multiprocessor (its registers), no other covers their latency.
  vec4 k_next[2u * kKvItems], v_next[2u * kKvItems];
  load_kv(first_key, last_query, g, k_next, v_next);
  barrier();  // every subgroup has its Q out of the tiles
  for (uint block = first_key; block <= last_query; block += kKeys) {
    store_kv(k_next, v_next);
    barrier();
    if (block + kKeys <= last_query) load_kv(block + kKeys, last_query, g, k_next, v_next);

    // S = Q K^T of the subgroup's rows: K rows are B's columns (column-major B from the K tile).
    // Every column tile's sums at once, depth outermost: independent products to interleave.
    FLOAT_MAT s_hi[kKeys / lN][kRows / lM], s_mid[kKeys / lN][kRows / lM], s_lo[kKeys / lN][kRows / lM];
    [[unroll]] for (uint j = 0u; j < kKeys / lN; ++j)
      [[unroll]] for (uint i = 0u; i < kRows / lM; ++i) {
        s_hi[j][i] = FLOAT_MAT(0.0);
        s_mid[j][i] = FLOAT_MAT(0.0);
        s_lo[j][i] = FLOAT_MAT(0.0);
      }
    [[unroll]] for (uint k = 0u; k < kDims / lK; ++k)
      [[unroll]] for (uint j = 0u; j < kKeys / lN; ++j) {
        HALF_MAT(lK, lN) b, b_mid, b_lo;
        uint at = j * lN * kHalfRow + k * lK / 8u;
        coopMatLoadNV(b, tiles, kKHi + at, kHalfRow, true);
        if (kSplitKV) {
          coopMatLoadNV(b_mid, tiles, kKMid + at, kHalfRow, true);
          coopMatLoadNV(b_lo, tiles, kKLo + at, kHalfRow, true);
        }
        [[unroll]] for (uint i = 0u; i < kRows / lM; ++i) {
          s_hi[j][i] = coopMatMulAddNV(q_hi[i][k], b, s_hi[j][i]);
          if (!kSplitQP) continue;
          s_mid[j][i] = coopMatMulAddNV(q_mid[i][k], b, s_mid[j][i]);
          s_lo[j][i] = coopMatMulAddNV(q_lo[i][k], b, s_lo[j][i]);
          if (kSplitKV) {
            s_mid[j][i] = coopMatMulAddNV(q_hi[i][k], b_mid, s_mid[j][i]);
            s_lo[j][i] = coopMatMulAddNV(q_mid[i][k], b_mid, s_lo[j][i]);
            s_lo[j][i] = coopMatMulAddNV(q_hi[i][k], b_lo, s_lo[j][i]);
          }
        }
      }
    [[unroll]] for (uint j = 0u; j < kKeys / lN; ++j)
      [[unroll]] for (uint i = 0u; i < kRows / lM; ++i)
        coopMatStoreNV(kSplitQP ? s_hi[j][i] + (s_mid[j][i] + s_lo[j][i] * (1.0 / COOP_LO_SCALE)) * (1.0 / COOP_LO_SCALE)
                                : s_hi[j][i],
                       tiles, s_at() + i * lM * kSRow + j * lN / 4u, kSRow, false);
    subgroup_sync();

    // Online softmax of this lane's half row.
    float s[kKeys / 2u];
    float block_max = -1.0 / 0.0;
    [[unroll]] for (uint c = 0u; c < kKeys / 8u; ++c) {
      vec4 four = uintBitsToFloat(tiles[s_at() + my_row * kSRow + half_keys / 4u + c]);
      [[unroll]] for (uint e = 0u; e < 4u; ++e) {
        uint j = block + half_keys + 4u * c + e;
        bool visible = valid_row && j <= position && (args.window == 0u || j + args.window > position);
        s[4u * c + e] = visible ? four[e] * args.scale : -1.0 / 0.0;
        block_max = max(block_max, s[4u * c + e]);
      }
    }
    subgroup_sync();  // every lane has its scores: P goes over them
    block_max = max(block_max, subgroupQuadSwapHorizontal(block_max));
    float new_max = max(row_max, block_max);
    // O is divided by exp(new max - old max); nothing to rescale while a row has seen no key.
    float grow = (new_max == -1.0 / 0.0 || row_max == -1.0 / 0.0) ? 1.0 : exp(new_max - row_max);
    float rescale = new_max == -1.0 / 0.0 ? 1.0 : exp(row_max - new_max);
    float block_sum = 0.0;
    [[unroll]] for (uint c = 0u; c < kKeys / 16u; ++c) {
      vec4 p[2];
      [[unroll]] for (uint e = 0u; e < 8u; ++e) {
        float pe = new_max == -1.0 / 0.0 ? 0.0 : exp(s[8u * c + e] - new_max);
        block_sum += pe;
        p[e / 4u][e % 4u] = pe * ATTENTION_P_SCALE;
      }
      if (!kSplitQP) {
        tiles[p_hi_at() + my_row * kPRow + half_keys / 8u + c] = halves8(p[0], p[1]);
        continue;
      }
      uvec4 hi, lo;
      split8(p[0], p[1], hi, lo);
      tiles[p_hi_at() + my_row * kPRow + half_keys / 8u + c] = hi;
      tiles[p_lo_at() + my_row * kPRow + half_keys / 8u + c] = lo;
    }
    row_sum = row_sum * rescale + (block_sum + subgroupQuadSwapHorizontal(block_sum));
    row_max = new_max;
    if (lane % 2u == 0u) tiles[r_at() + my_row / 4u][my_row % 4u] = floatBitsToUint(grow);
    subgroup_sync();

    // O = O / grow + P V.
    [[unroll]] for (uint i = 0u; i < kRows / lM; ++i) {
      FLOAT_MAT grow_tile;
      coopMatLoadNV(grow_tile, tiles, r_at() + i * lM / 4u, 0u, true);  // column-major, stride 0: row r's factor in every column
      // P's two parts once per block, for every column tile of V.
      HALF_MAT(lM, lK) a[kKeys / lK], a_lo[kKeys / lK];
      [[unroll]] for (uint k = 0u; k < kKeys / lK; ++k) {
        coopMatLoadNV(a[k], tiles, p_hi_at() + i * lM * kPRow + k * lK / 8u, kPRow, false);
        if (kSplitQP) coopMatLoadNV(a_lo[k], tiles, p_lo_at() + i * lM * kPRow + k * lK / 8u, kPRow, false);
      }
      [[unroll]] for (uint n = 0u; n < kDims / lN; ++n) {
        FLOAT_MAT part = FLOAT_MAT(0.0), lo_part = FLOAT_MAT(0.0);
        [[unroll]] for (uint k = 0u; k < kKeys / lK; ++k) {
          HALF_MAT(lK, lN) b, b_lo;
          uint at = k * lK * kHalfRow + n * lN / 8u;
          coopMatLoadNV(b, tiles, kVHi + at, kHalfRow, false);
          if (kSplitKV) coopMatLoadNV(b_lo, tiles, kVLo + at, kHalfRow, false);
          part = coopMatMulAddNV(a[k], b, part);
          if (!kSplitQP) continue;
          lo_part = coopMatMulAddNV(a_lo[k], b, lo_part);
          if (kSplitKV) lo_part = coopMatMulAddNV(a[k], b_lo, lo_part);
        }
        o[i][n] = o[i][n] / grow_tile + (kSplitQP ? part + lo_part * (1.0 / COOP_LO_SCALE) : part) * (1.0 / ATTENTION_P_SCALE);
      }
    }
    barrier();  // the K and V tiles (and this subgroup's S, P) are read before the next block's stores
  }

  // The output through the tiles (f32), then each row over the sink's denominator.
  [[unroll]] for (uint i = 0u; i < kRows / lM; ++i)
    [[unroll]] for (uint n = 0u; n < kDims / lN; ++n)
      coopMatStoreNV(o[i][n], tiles, (sub_row + i * lM) * kFloatRow + n * lN / 4u, kFloatRow, false);
  subgroup_sync();
  if (!valid_row) return;
  uint head = g * G + (sub_row + my_row) % G;
  float sink = FloatsIn(args.sinks).v[head];
  float top = max(row_max, sink);
  float scale_o = row_max == -1.0 / 0.0 ? 0.0 : exp(row_max - top);
  float denominator = row_sum * scale_o + exp(sink - top);
  uint out_base = (my_query * args.heads + head) * D / 4u;
  [[unroll]] for (uint c = 0u; c < kDims / 8u; ++c) {
    uint d4 = (lane % 2u) * (kDims / 8u) + c;
    if (4u * d4 >= D) break;
    vec4 value = uintBitsToFloat(tiles[(sub_row + my_row) * kFloatRow + d4]);
    Vec4s(args.target).v[out_base + d4] = value * scale_o / denominator;
  }
}

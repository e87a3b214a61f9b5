// ggml's reference quantizers (the quantize_row_*_ref functions llama-quantize runs when it has no
// importance matrix), written from the facts of ggml-quants.c: the same search for each block's
// scales, the same f32 operations in the same order, each rounded on its own (this file is built
// with -ffp-contract=off: ggml's reference build for x86-64 has no fused multiply-add), so the
// bytes are ggml's. The facts that decide bits:
//   - every intermediate is an f32; an integer level enters a product converted to f32 first
//     (w * l * x is (w * float(l)) * x), sums run in index order;
//   - ggml's nearest_int rounds by adding 1.5 * 2^23 and taking the low mantissa bits: ties to
//     even, exact for |x| < 2^22;
//   - the 32-element types truncate x + 16.5 (Q5_0) or x + 0.5 (Q5_1) toward zero, as C's cast
//     does; the reciprocal id = 1 / d multiplies, the K-quants divide by their sub-block scales;
//   - a scale is stored as f16 (round to nearest even) and read back before the levels are chosen.
// Out-of-range casts, which are undefined in C, are given what x86's truncating conversion gives
// (the integer indefinite 0x80000000), so a NaN or infinite input encodes as ggml's build does.
#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "formats/codecs/ggml_quants.h"
#include "formats/core/float16.h"

namespace gptoss::ggml_quants {
namespace {

void put_u16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}
void put_f16(uint8_t* p, float v) { put_u16(p, f32_to_f16(v)); }
void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
float f16_at(const uint8_t* p) { return f16_to_f32(static_cast<uint16_t>(p[0] | (p[1] << 8))); }

// ggml's nearest_int: round to nearest, ties to even, through the f32 mantissa.
int nearest_int(float v) {
  const int32_t i = std::bit_cast<int32_t>(v + 12582912.f);
  return (i & 0x007fffff) - 0x00400000;
}

// The nibble layout of the 32-element types: element j in the low nibble of qs[j], element j + 16
// in the high one; the fifth bit of element i in bit i of qh.
void pack_levels32(const uint8_t (&level)[32], uint8_t* qs, uint8_t* qh) {
  uint32_t high = 0;
  for (unsigned j = 0; j < 16; ++j) {
    qs[j] = static_cast<uint8_t>((level[j] & 0x0F) | ((level[j + 16] & 0x0F) << 4));
    high |= static_cast<uint32_t>((level[j] & 0x10u) >> 4) << j;
    high |= static_cast<uint32_t>((level[j + 16] & 0x10u) >> 4) << (j + 16);
  }
  if (qh) put_u32(qh, high);
}

// The element of largest magnitude (the first of equals), as Q4_0 / Q5_0 / Q6_K's helper pick it.
float signed_absmax(const float* x, unsigned n) {
  float amax = 0, max = 0;
  for (unsigned j = 0; j < n; ++j)
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  return max;
}

void min_max(const float* x, unsigned n, float& min, float& max) {
  min = FLT_MAX;
  max = -FLT_MAX;
  for (unsigned j = 0; j < n; ++j) {
    if (x[j] < min) min = x[j];
    if (x[j] > max) max = x[j];
  }
}

// Symmetric types (Q4_0, Q5_0): d = (signed max) / -half, level = trunc(x / d + half + 0.5), at
// most 2 half - 1. Block: d, then qh (Q5_0's fifth bits) at `qh_at` when there is one, qs at `qs_at`.
void symmetric32(const float* in, size_t n_blocks, BlockShape shape, float half, unsigned qh_at, unsigned qs_at,
                 uint8_t* out) {
  const int top = static_cast<int>(2 * half) - 1;
  for (size_t b = 0; b < n_blocks; ++b, in += 32, out += shape.bytes) {
    const float d = signed_absmax(in, 32) / -half;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    put_f16(out, d);
    uint8_t level[32];
    for (unsigned j = 0; j < 32; ++j)
      level[j] = static_cast<uint8_t>(std::min(top, static_cast<int>(static_cast<int8_t>(truncate_to_int(in[j] * id + (half + 0.5f))))));
    pack_levels32(level, out + qs_at, qh_at ? out + qh_at : nullptr);
  }
}

// Asymmetric types (Q4_1, Q5_1): d = (max - min) / steps, m = min, level = trunc((x - min) / d +
// 0.5); Q4_1 caps the level at 15, Q5_1 keeps the cast's low byte, as ggml does. Block: d, m, then
// qh and qs as above.
void asymmetric32(const float* in, size_t n_blocks, BlockShape shape, int steps, bool cap, unsigned qh_at,
                  unsigned qs_at, uint8_t* out) {
  for (size_t b = 0; b < n_blocks; ++b, in += 32, out += shape.bytes) {
    float min, max;
    min_max(in, 32, min, max);
    const float d = (max - min) / static_cast<float>(steps);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    put_f16(out, d);
    put_f16(out + 2, min);
    uint8_t level[32];
    for (unsigned j = 0; j < 32; ++j) {
      const int32_t t = truncate_to_int((in[j] - min) * id + 0.5f);
      level[j] = cap ? static_cast<uint8_t>(std::min(steps, static_cast<int>(static_cast<int8_t>(t))))
                     : static_cast<uint8_t>(t);
    }
    pack_levels32(level, out + qs_at, qh_at ? out + qh_at : nullptr);
  }
}

// ggml's make_qkx2_quants for the K-quants with a minimum: levels 0..nmax of 32 weighted elements
// and the (scale, -min) pair that minimizes the weighted squared error, searched over nstep + 1
// trial scales from (nmax + rmin) / (max - min) in steps of rdelta / (max - min).
float scale_and_min(const float* x, const float* weights, int nmax, float rmin, float rdelta, int nstep, uint8_t* L,
                    float* the_min) {
  constexpr int n = 32;
  float min = x[0], max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    std::fill(L, L + n, uint8_t{0});
    *the_min = -min;
    return 0.f;
  }
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * (x[i] - min));
    L[i] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    float diff = scale * static_cast<float>(L[i]) + min - x[i];
    diff = diff * diff;
    best_error += weights[i] * diff;
  }
  uint8_t Laux[n];
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::max(0, std::min(nmax, nearest_int(iscale * (x[i] - min))));
      Laux[i] = static_cast<uint8_t>(l);
      const float w = weights[i], fl = static_cast<float>(l);
      sum_l += w * fl;
      sum_l2 += w * fl * fl;
      sum_xl += w * fl * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * static_cast<float>(Laux[i]) + this_min - x[i];
        diff = diff * diff;
        cur_error += weights[i] * diff;
      }
      if (cur_error < best_error) {
        std::copy(Laux, Laux + n, L);
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

// Q4_K and Q5_K: eight sub-blocks of 32, each with a six-bit scale and min relative to the
// block's d and dmin. Writes d, dmin and the 12 scale bytes at `block`, and the levels (0..nmax).
void k_scales_and_levels(const float* x, int nmax, float rmin, int nstep, uint8_t* block, uint8_t (&L)[256]) {
  float scales[8], mins[8], weights[32];
  float max_scale = 0, max_min = 0;  // with the min deducted the scales are never negative
  for (unsigned j = 0; j < 8; ++j) {
    const float* xs = x + 32 * j;
    float sum_x2 = 0;
    for (unsigned l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (unsigned l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xs[l]);
    scales[j] = scale_and_min(xs, weights, nmax, rmin, 0.1f, nstep, L + 32 * j, &mins[j]);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  uint8_t* packed = block + 4;
  for (unsigned j = 0; j < 8; ++j) {
    const uint8_t ls = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[j])));
    const uint8_t lm = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[j])));
    if (j < 4) {
      packed[j] = ls;
      packed[j + 4] = lm;
    } else {
      packed[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
      packed[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
      packed[j] |= static_cast<uint8_t>((lm >> 4) << 6);
    }
  }
  put_f16(block, max_scale / 63.f);
  put_f16(block + 2, max_min / 63.f);
  // The levels again against the stored (rounded) scales; a sub-block whose scale rounds to zero
  // keeps the levels of the search.
  const float d_all = f16_at(block), dmin_all = f16_at(block + 2);
  for (unsigned j = 0; j < 8; ++j) {
    const ScaleMin sm = k_scale_min(packed, j);
    const float d = d_all * static_cast<float>(sm.scale);
    if (d == 0.0f) continue;
    const float dm = dmin_all * static_cast<float>(sm.min);
    for (unsigned i = 0; i < 32; ++i)
      L[32 * j + i] = static_cast<uint8_t>(std::max(0, std::min(nmax, nearest_int((x[32 * j + i] + dm) / d))));
  }
}

// ggml's make_qx_quants with rmse_type 1 (weights x^2) for Q6_K: signed levels -nmax..nmax-1 of 16
// elements, stored + nmax, and the scale; the start 1 / iscale = max / -nmax is refined over 18
// neighbours (nmax + 0.1 is for is = -9..9) by the weighted least-squares fit.
float symmetric_scale(const float* x, int nmax, int8_t* L) {
  constexpr int n = 16;
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < 1e-15f) {  // ggml's GROUP_MAX_EPS: all zero
    std::fill(L, L + n, int8_t{0});
    return 0.f;
  }
  auto level = [nmax](float v) { return std::max(-nmax, std::min(nmax - 1, nearest_int(v))); };
  float iscale = static_cast<float>(-nmax) / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = level(iscale * x[i]);
    L[i] = static_cast<int8_t>(l + nmax);
    const float w = x[i] * x[i], fl = static_cast<float>(l);
    sumlx += w * x[i] * fl;
    suml2 += w * fl * fl;
  }
  float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i], fl = static_cast<float>(level(iscale * x[i]));
      sumlx += w * x[i] * fl;
      suml2 += w * fl * fl;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(nmax + level(iscale * x[i]));
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// Q4_K: d, dmin, 12 scale bytes, then qs[128]: byte l of each 32-byte run holds element l of a
// 64-element chunk (low nibble) and element l + 32 (high).
void q4_k_block(const float* x, uint8_t* b) {
  uint8_t L[256];
  k_scales_and_levels(x, 15, -1.f, 20, b, L);
  uint8_t* q = b + 16;
  for (unsigned j = 0; j < 256; j += 64, q += 32)
    for (unsigned l = 0; l < 32; ++l) q[l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
}

// Q5_K: as Q4_K with the fifth bits in qh[32]: chunk c's element l sets bit 2c of qh[l], its
// element l + 32 bit 2c + 1.
void q5_k_block(const float* x, uint8_t* b) {
  uint8_t L[256];
  k_scales_and_levels(x, 31, -0.5f, 15, b, L);
  uint8_t* qh = b + 16;
  uint8_t* ql = b + 48;
  std::memset(qh, 0, 32);
  for (unsigned c = 0; c < 4; ++c, ql += 32)
    for (unsigned j = 0; j < 32; ++j) {
      unsigned l1 = L[64 * c + j], l2 = L[64 * c + j + 32];
      if (l1 > 15) {
        l1 -= 16;
        qh[j] |= static_cast<uint8_t>(1u << (2 * c));
      }
      if (l2 > 15) {
        l2 -= 16;
        qh[j] |= static_cast<uint8_t>(2u << (2 * c));
      }
      ql[j] = static_cast<uint8_t>(l1 | (l2 << 4));
    }
}

// Q6_K: sixteen sub-blocks of 16 with int8 scales relative to d = max_scale / -128; levels 0..63.
void q6_k_block(const float* x, uint8_t* b) {
  int8_t L[256];
  float scales[16];
  float max_scale = 0, max_abs_scale = 0;
  for (unsigned ib = 0; ib < 16; ++ib) {
    scales[ib] = symmetric_scale(x + 16 * ib, 32, L + 16 * ib);
    const float abs_scale = std::fabs(scales[ib]);
    if (abs_scale > max_abs_scale) {
      max_abs_scale = abs_scale;
      max_scale = scales[ib];
    }
  }
  uint8_t* ql = b;
  uint8_t* qh = b + 128;
  int8_t* sc = reinterpret_cast<int8_t*>(b + 192);
  if (max_abs_scale < 1e-15f) {
    std::memset(b, 0, kQ6_K.bytes);
    return;
  }
  const float iscale = -128.f / max_scale;
  put_f16(b + 208, 1 / iscale);
  for (unsigned ib = 0; ib < 16; ++ib) sc[ib] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[ib])));
  const float d_all = f16_at(b + 208);
  for (unsigned j = 0; j < 16; ++j) {
    const float d = d_all * static_cast<float>(sc[j]);
    if (d == 0.0f) continue;
    for (unsigned i = 0; i < 16; ++i)
      L[16 * j + i] = static_cast<int8_t>(std::max(-32, std::min(31, nearest_int(x[16 * j + i] / d))) + 32);
  }
  for (unsigned j = 0; j < 256; j += 128, ql += 64, qh += 32)
    for (unsigned l = 0; l < 32; ++l) {
      const int q1 = L[j + l], q2 = L[j + l + 32], q3 = L[j + l + 64], q4 = L[j + l + 96];
      ql[l] = static_cast<uint8_t>((q1 & 0xF) | ((q3 & 0xF) << 4));
      ql[l + 32] = static_cast<uint8_t>((q2 & 0xF) | ((q4 & 0xF) << 4));
      qh[l] = static_cast<uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
    }
}

}  // namespace

// The 32-element types: one loop over their blocks with the layout's offsets (Q4_0 d | qs;
// Q5_0 d | qh | qs; Q4_1 d m | qs; Q5_1 d m | qh | qs). The K types: one block at a time.
void quantize_q4_0(const float* in, size_t n, uint8_t* out) { symmetric32(in, n, kQ4_0, 8.0f, 0, 2, out); }
void quantize_q5_0(const float* in, size_t n, uint8_t* out) { symmetric32(in, n, kQ5_0, 16.0f, 2, 6, out); }
void quantize_q4_1(const float* in, size_t n, uint8_t* out) { asymmetric32(in, n, kQ4_1, 15, true, 0, 4, out); }
void quantize_q5_1(const float* in, size_t n, uint8_t* out) { asymmetric32(in, n, kQ5_1, 31, false, 4, 8, out); }
void quantize_q4_k(const float* in, size_t n, uint8_t* out) {
  for (size_t b = 0; b < n; ++b) q4_k_block(in + 256 * b, out + kQ4_K.bytes * b);
}
void quantize_q5_k(const float* in, size_t n, uint8_t* out) {
  for (size_t b = 0; b < n; ++b) q5_k_block(in + 256 * b, out + kQ5_K.bytes * b);
}
void quantize_q6_k(const float* in, size_t n, uint8_t* out) {
  for (size_t b = 0; b < n; ++b) q6_k_block(in + 256 * b, out + kQ6_K.bytes * b);
}

}  // namespace gptoss::ggml_quants

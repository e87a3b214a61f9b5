// ggml's block quantizations decoded to f32 (the layouts are in ggml_quants.h). Each value is
// computed with the operations ggml's dequantize_row_* use, in the same order and in f32: an
// integer level converted to float, times a scale that is itself a rounded f32 product, minus an
// offset, each step rounded on its own. Integer levels are exact in f32, and a multiplication by
// -1 is a sign flip, so those may be written either way. The inner loops run over the 16 or 32
// elements of a sub-block with one scale, plain loops the compiler can vectorize.
#include "formats/codecs/ggml_quants.h"

#include <bit>
#include <cstring>

#include "formats/codecs/iq_grids.h"
#include "formats/core/float16.h"

namespace gptoss::ggml_quants {

ScaleMin k_scale_min(const uint8_t* q, unsigned j) {
  if (j < 4) return {static_cast<uint8_t>(q[j] & 63), static_cast<uint8_t>(q[j + 4] & 63)};
  return {static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4)),
          static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4))};
}

uint8_t q3_k_scale(const uint8_t* s, unsigned j) {
  const unsigned low = j < 8 ? s[j] & 0xF : s[j - 8] >> 4;
  const unsigned high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
  return static_cast<uint8_t>(low | (high << 4));
}

namespace {

inline uint16_t u16_at(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
inline uint32_t u32_at(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}
inline float f16_at(const uint8_t* p) { return f16_to_f32(u16_at(p)); }

// Byte j of a grid entry.
inline uint8_t grid_byte(uint64_t entry, unsigned j) { return static_cast<uint8_t>(entry >> (8 * j)); }

// Eight elements db * magnitude, negated where `signs` has bit j set (IQ2 and IQ3 types): the
// sign bit flipped, which is what ggml's multiplication by -1 gives.
inline void signed_grid8(float db, uint64_t magnitudes, uint8_t signs, float* y) {
  uint8_t m[8];
  std::memcpy(m, &magnitudes, 8);  // little-endian host (lanes.h): byte j is element j
  for (unsigned j = 0; j < 8; ++j) {
    const uint32_t v = std::bit_cast<uint32_t>(db * static_cast<float>(m[j]));
    y[j] = std::bit_cast<float>(v ^ (static_cast<uint32_t>((signs >> j) & 1) << 31));
  }
}

// Two 4-element entries of a 3-bit grid as one group of eight.
inline uint64_t grid_pair(uint32_t first, uint32_t second) { return first | (static_cast<uint64_t>(second) << 32); }

// The sub-block scale of the IQ2 types: d * (0.5 + s) * 0.25 for a 4-bit s, as ggml rounds it.
inline float iq2_scale(float d, uint32_t s) { return d * (0.5f + static_cast<float>(s)) * 0.25f; }

// The 32-element types: element j in the low nibble of qs[j], element j + 16 in the high one,
// with a fifth bit j of qh for Q5_0 / Q5_1. `value(level, j)` gives element j of its level.
template <class Value>
inline void nibbles32(const uint8_t* qs, float* out, Value value) {
  for (unsigned j = 0; j < 16; ++j) {
    out[j] = value(static_cast<uint32_t>(qs[j] & 0x0F), j);
    out[j + 16] = value(static_cast<uint32_t>(qs[j] >> 4), j + 16);
  }
}

void q4_0_block(const uint8_t* x, float* out) {
  const float d = f16_at(x);
  nibbles32(x + 2, out, [d](uint32_t q, unsigned) { return static_cast<float>(static_cast<int>(q) - 8) * d; });
}

void q4_1_block(const uint8_t* x, float* out) {
  const float d = f16_at(x), m = f16_at(x + 2);
  nibbles32(x + 4, out, [d, m](uint32_t q, unsigned) { return static_cast<float>(q) * d + m; });
}

void q5_0_block(const uint8_t* x, float* out) {
  const float d = f16_at(x);
  const uint32_t qh = u32_at(x + 2);
  nibbles32(x + 6, out, [d, qh](uint32_t q, unsigned j) {
    return static_cast<float>(static_cast<int>(q | (((qh >> j) & 1) << 4)) - 16) * d;
  });
}

void q5_1_block(const uint8_t* x, float* out) {
  const float d = f16_at(x), m = f16_at(x + 2);
  const uint32_t qh = u32_at(x + 4);
  nibbles32(x + 8, out, [d, m, qh](uint32_t q, unsigned j) {
    return static_cast<float>(q | (((qh >> j) & 1) << 4)) * d + m;
  });
}

void iq4_nl_block(const uint8_t* x, float* out) {
  const float d = f16_at(x);
  nibbles32(x + 2, out, [d](uint32_t q, unsigned) { return d * static_cast<float>(kIq4nlValues[q]); });
}

// Q2_K: each half of 128 elements takes 32 bytes of qs; its four 32-element runs are the four
// 2-bit fields of those bytes (bits 0-1 first), each run two sub-blocks of 16 with their own scales.
void q2_k_block(const uint8_t* x, float* out) {
  const uint8_t* scales = x;
  const uint8_t* q = x + 16;
  const float d = f16_at(x + 80), dmin = f16_at(x + 82);
  unsigned is = 0;
  for (unsigned half = 0; half < 2; ++half, q += 32)
    for (unsigned shift = 0; shift < 8; shift += 2)
      for (unsigned part = 0; part < 2; ++part, ++is, out += 16) {
        const float dl = d * static_cast<float>(scales[is] & 0xF);
        const float ml = dmin * static_cast<float>(scales[is] >> 4);
        for (unsigned l = 0; l < 16; ++l) out[l] = dl * static_cast<float>((q[16 * part + l] >> shift) & 3) - ml;
      }
}

// Q3_K: the runs of Q2_K; the third bit of element l of run r (0..7) is bit r of hmask[l] (of
// hmask[16 + l] for the run's second sub-block); a clear bit subtracts 4.
void q3_k_block(const uint8_t* x, float* out) {
  const uint8_t* hmask = x;
  const uint8_t* q = x + 32;
  const uint8_t* scales = x + 96;
  const float d = f16_at(x + 108);
  unsigned is = 0, run = 0;
  for (unsigned half = 0; half < 2; ++half, q += 32)
    for (unsigned shift = 0; shift < 8; shift += 2, ++run)
      for (unsigned part = 0; part < 2; ++part, ++is, out += 16) {
        const float dl = d * static_cast<float>(static_cast<int>(q3_k_scale(scales, is)) - 32);
        for (unsigned l = 0; l < 16; ++l) {
          const int low = (q[16 * part + l] >> shift) & 3;
          const int minus = (hmask[16 * part + l] >> run) & 1 ? 0 : 4;
          out[l] = dl * static_cast<float>(low - minus);
        }
      }
}

// Q4_K: four chunks of 64 elements, each 32 bytes of qs: low nibbles the first 32 elements
// (sub-block 2c), high nibbles the next 32 (sub-block 2c + 1).
void q4_k_block(const uint8_t* x, float* out) {
  const float d = f16_at(x), dmin = f16_at(x + 2);
  const uint8_t* scales = x + 4;
  const uint8_t* q = x + 16;
  for (unsigned chunk = 0; chunk < 4; ++chunk, q += 32, out += 64) {
    const ScaleMin a = k_scale_min(scales, 2 * chunk), c = k_scale_min(scales, 2 * chunk + 1);
    const float d1 = d * static_cast<float>(a.scale), m1 = dmin * static_cast<float>(a.min);
    const float d2 = d * static_cast<float>(c.scale), m2 = dmin * static_cast<float>(c.min);
    for (unsigned l = 0; l < 32; ++l) out[l] = d1 * static_cast<float>(q[l] & 0xF) - m1;
    for (unsigned l = 0; l < 32; ++l) out[32 + l] = d2 * static_cast<float>(q[l] >> 4) - m2;
  }
}

// Q5_K: Q4_K with a fifth bit: bit 2c of qh[l] for element l of sub-block 2c, bit 2c + 1 for
// sub-block 2c + 1.
void q5_k_block(const uint8_t* x, float* out) {
  const float d = f16_at(x), dmin = f16_at(x + 2);
  const uint8_t* scales = x + 4;
  const uint8_t* qh = x + 16;
  const uint8_t* q = x + 48;
  for (unsigned chunk = 0; chunk < 4; ++chunk, q += 32, out += 64) {
    const ScaleMin a = k_scale_min(scales, 2 * chunk), c = k_scale_min(scales, 2 * chunk + 1);
    const float d1 = d * static_cast<float>(a.scale), m1 = dmin * static_cast<float>(a.min);
    const float d2 = d * static_cast<float>(c.scale), m2 = dmin * static_cast<float>(c.min);
    for (unsigned l = 0; l < 32; ++l)
      out[l] = d1 * static_cast<float>((q[l] & 0xF) + (((qh[l] >> (2 * chunk)) & 1) << 4)) - m1;
    for (unsigned l = 0; l < 32; ++l)
      out[32 + l] = d2 * static_cast<float>((q[l] >> 4) + (((qh[l] >> (2 * chunk + 1)) & 1) << 4)) - m2;
  }
}

// Q6_K: each half of 128 elements takes 64 bytes of ql and 32 of qh. Element l (0..31) of the
// half's four 32-element runs: low 4 bits from ql[l], ql[l + 32], high nibbles of the same, high
// 2 bits from bits 0-1, 2-3, 4-5, 6-7 of qh[l]; one int8 scale per 16 elements.
void q6_k_block(const uint8_t* x, float* out) {
  const uint8_t* ql = x;
  const uint8_t* qh = x + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(x + 192);
  const float d = f16_at(x + 208);
  for (unsigned half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8, out += 128)
    for (unsigned run = 0; run < 4; ++run)
      for (unsigned part = 0; part < 2; ++part) {
        const float dl = d * static_cast<float>(sc[2 * run + part]);
        const uint8_t* low = ql + 32 * (run & 1) + 16 * part;
        const unsigned nibble = 4 * (run >> 1), hshift = 2 * run;
        for (unsigned l = 0; l < 16; ++l) {
          const uint32_t bits = ((low[l] >> nibble) & 0xF) | (((qh[16 * part + l] >> hshift) & 3) << 4);
          const int level = static_cast<int>(bits) - 32;
          out[32 * run + 16 * part + l] = dl * static_cast<float>(level);
        }
      }
}

void iq4_xs_block(const uint8_t* x, float* out) {
  const float d = f16_at(x);
  const uint16_t scales_h = u16_at(x + 2);
  const uint8_t* scales_l = x + 4;
  const uint8_t* qs = x + 8;
  for (unsigned ib = 0; ib < 8; ++ib, qs += 16, out += 32) {
    const int ls = ((scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) | (((scales_h >> (2 * ib)) & 3) << 4);
    const float dl = d * static_cast<float>(ls - 32);
    nibbles32(qs, out, [dl](uint32_t q, unsigned) { return dl * static_cast<float>(kIq4nlValues[q]); });
  }
}

// IQ3_S: per 32 elements, 8 index bytes (a 9th bit each from qh), 4 sign bytes and a 4-bit scale
// (low nibble for even sub-blocks); each index picks 4 magnitudes.
void iq3_s_block(const uint8_t* x, float* out) {
  const float d = f16_at(x);
  const uint8_t* qs = x + 2;
  const uint8_t* qh = x + 66;
  const uint8_t* signs = x + 74;
  const uint8_t* scales = x + 106;
  for (unsigned ib = 0; ib < 8; ++ib, qs += 8, signs += 4) {
    const float db = d * static_cast<float>(1 + 2 * ((scales[ib / 2] >> (4 * (ib % 2))) & 0xF));
    for (unsigned l = 0; l < 4; ++l, out += 8) {
      const uint32_t first = qs[2 * l] | ((qh[ib] << (8 - 2 * l)) & 256);
      const uint32_t second = qs[2 * l + 1] | ((qh[ib] << (7 - 2 * l)) & 256);
      signed_grid8(db, grid_pair(iq_grids::kIq3s[first], iq_grids::kIq3s[second]), signs[l], out);
    }
  }
}

// IQ3_XXS: per 32 elements, 8 index bytes (4 magnitudes each) and a u32 of four 7-bit sign
// indices (bits 0-27) and a 4-bit scale (bits 28-31).
void iq3_xxs_block(const uint8_t* x, float* out) {
  const float d = f16_at(x);
  const uint8_t* qs = x + 2;
  const uint8_t* scales_and_signs = x + 66;
  for (unsigned ib = 0; ib < 8; ++ib, qs += 8) {
    const uint32_t aux = u32_at(scales_and_signs + 4 * ib);
    const float db = d * (0.5f + static_cast<float>(aux >> 28)) * 0.5f;
    for (unsigned l = 0; l < 4; ++l, out += 8)
      signed_grid8(db, grid_pair(iq_grids::kIq3xxs[qs[2 * l]], iq_grids::kIq3xxs[qs[2 * l + 1]]),
                   iq_grids::signs_of_index(aux >> (7 * l)), out);
  }
}

// IQ2_S: per 32 elements, 4 index bytes (bits 8-9 from qh), 4 sign bytes and two 4-bit scales
// (low nibble for the first 16 elements).
void iq2_s_block(const uint8_t* x, float* out) {
  const float d = f16_at(x);
  const uint8_t* qs = x + 2;
  const uint8_t* signs = x + 34;
  const uint8_t* qh = x + 66;
  const uint8_t* scales = x + 74;
  for (unsigned ib = 0; ib < 8; ++ib, qs += 4, signs += 4) {
    const float db[2] = {iq2_scale(d, scales[ib] & 0xF), iq2_scale(d, scales[ib] >> 4)};
    for (unsigned l = 0; l < 4; ++l, out += 8) {
      const uint32_t index = qs[l] | ((qh[ib] << (8 - 2 * l)) & 0x300);
      signed_grid8(db[l / 2], iq_grids::kIq2s[index], signs[l], out);
    }
  }
}

// IQ2_XS: per 32 elements, four u16 of a 9-bit grid index and a 7-bit sign index, and two 4-bit
// scales.
void iq2_xs_block(const uint8_t* x, float* out) {
  const float d = f16_at(x);
  const uint8_t* qs = x + 2;
  const uint8_t* scales = x + 66;
  for (unsigned ib = 0; ib < 8; ++ib) {
    const float db[2] = {iq2_scale(d, scales[ib] & 0xF), iq2_scale(d, scales[ib] >> 4)};
    for (unsigned l = 0; l < 4; ++l, out += 8) {
      const uint16_t q = u16_at(qs + 2 * (4 * ib + l));
      signed_grid8(db[l / 2], iq_grids::kIq2xs[q & 511], iq_grids::signs_of_index(q >> 9), out);
    }
  }
}

// IQ2_XXS: per 32 elements, 4 grid index bytes and a u32 of four 7-bit sign indices and a 4-bit
// scale (bits 28-31).
void iq2_xxs_block(const uint8_t* x, float* out) {
  const float d = f16_at(x);
  for (unsigned ib = 0; ib < 8; ++ib) {
    const uint8_t* group = x + 2 + 8 * ib;
    const uint32_t aux = u32_at(group + 4);
    const float db = iq2_scale(d, aux >> 28);
    for (unsigned l = 0; l < 4; ++l, out += 8)
      signed_grid8(db, iq_grids::kIq2xxs[group[l]], iq_grids::signs_of_index(aux >> (7 * l)), out);
  }
}

// Eight elements dl * (grid value + shift) of an IQ1 grid entry (signed bytes).
inline void shifted_grid8(float dl, uint64_t entry, float shift, float* y) {
  for (unsigned j = 0; j < 8; ++j) y[j] = dl * (static_cast<float>(static_cast<int8_t>(grid_byte(entry, j))) + shift);
}

// IQ1_S: per 32 elements, 4 index bytes and a u16 holding the indices' bits 8-10 (3 bits each),
// a 3-bit scale (bits 12-14) and the sign of the shift (bit 15).
void iq1_s_block(const uint8_t* x, float* out) {
  const float d = f16_at(x);
  const uint8_t* qs = x + 2;
  const uint8_t* qh = x + 34;
  for (unsigned ib = 0; ib < 8; ++ib, qs += 4) {
    const uint16_t h = u16_at(qh + 2 * ib);
    const float dl = d * static_cast<float>(2 * ((h >> 12) & 7) + 1);
    const float shift = h & 0x8000 ? -kIq1Shift : kIq1Shift;
    for (unsigned l = 0; l < 4; ++l, out += 8)
      shifted_grid8(dl, iq_grids::kIq1s[qs[l] | (((h >> (3 * l)) & 7) << 8)], shift, out);
  }
}

// IQ1_M: per 32 elements, 4 index bytes and 2 bytes of qh (per group of 8: a nibble of the
// index's bits 8-10 and the shift's sign in bit 3); two 3-bit scales per 32 elements in the u16
// words of `scales`, whose top nibbles together hold the block's f16 d.
void iq1_m_block(const uint8_t* x, float* out) {
  const uint8_t* qs = x;
  const uint8_t* qh = x + 32;
  const uint16_t sc[4] = {u16_at(x + 48), u16_at(x + 50), u16_at(x + 52), u16_at(x + 54)};
  const float d = f16_to_f32(static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) |
                                                   (sc[3] & 0xF000)));
  for (unsigned ib = 0; ib < 8; ++ib, qs += 4, qh += 2) {
    const unsigned shift_bits = 6 * (ib % 2);
    const float dl[2] = {d * static_cast<float>(2 * ((sc[ib / 2] >> shift_bits) & 7) + 1),
                         d * static_cast<float>(2 * ((sc[ib / 2] >> (shift_bits + 3)) & 7) + 1)};
    for (unsigned l = 0; l < 4; ++l, out += 8) {
      const uint8_t h = static_cast<uint8_t>(qh[l / 2] >> (4 * (l % 2)));  // this group's nibble
      const uint32_t index = qs[l] | ((h & 7u) << 8);
      shifted_grid8(dl[l / 2], iq_grids::kIq1s[index], h & 8 ? -kIq1Shift : kIq1Shift, out);
    }
  }
}

// The blocks of a tensor one after the other.
template <void (*Block)(const uint8_t*, float*), BlockShape Shape>
void each_block(const uint8_t* blocks, size_t n_blocks, float* out) {
  for (size_t b = 0; b < n_blocks; ++b) Block(blocks + b * Shape.bytes, out + b * Shape.elements);
}

}  // namespace

void dequantize_q4_0(const uint8_t* b, size_t n, float* out) { each_block<q4_0_block, kQ4_0>(b, n, out); }
void dequantize_q4_1(const uint8_t* b, size_t n, float* out) { each_block<q4_1_block, kQ4_1>(b, n, out); }
void dequantize_q5_0(const uint8_t* b, size_t n, float* out) { each_block<q5_0_block, kQ5_0>(b, n, out); }
void dequantize_q5_1(const uint8_t* b, size_t n, float* out) { each_block<q5_1_block, kQ5_1>(b, n, out); }
void dequantize_iq4_nl(const uint8_t* b, size_t n, float* out) { each_block<iq4_nl_block, kIq4Nl>(b, n, out); }
void dequantize_q2_k(const uint8_t* b, size_t n, float* out) { each_block<q2_k_block, kQ2_K>(b, n, out); }
void dequantize_q3_k(const uint8_t* b, size_t n, float* out) { each_block<q3_k_block, kQ3_K>(b, n, out); }
void dequantize_q4_k(const uint8_t* b, size_t n, float* out) { each_block<q4_k_block, kQ4_K>(b, n, out); }
void dequantize_q5_k(const uint8_t* b, size_t n, float* out) { each_block<q5_k_block, kQ5_K>(b, n, out); }
void dequantize_q6_k(const uint8_t* b, size_t n, float* out) { each_block<q6_k_block, kQ6_K>(b, n, out); }
void dequantize_iq4_xs(const uint8_t* b, size_t n, float* out) { each_block<iq4_xs_block, kIq4Xs>(b, n, out); }
void dequantize_iq3_s(const uint8_t* b, size_t n, float* out) { each_block<iq3_s_block, kIq3S>(b, n, out); }
void dequantize_iq3_xxs(const uint8_t* b, size_t n, float* out) { each_block<iq3_xxs_block, kIq3Xxs>(b, n, out); }
void dequantize_iq2_s(const uint8_t* b, size_t n, float* out) { each_block<iq2_s_block, kIq2S>(b, n, out); }
void dequantize_iq2_xs(const uint8_t* b, size_t n, float* out) { each_block<iq2_xs_block, kIq2Xs>(b, n, out); }
void dequantize_iq2_xxs(const uint8_t* b, size_t n, float* out) { each_block<iq2_xxs_block, kIq2Xxs>(b, n, out); }
void dequantize_iq1_s(const uint8_t* b, size_t n, float* out) { each_block<iq1_s_block, kIq1S>(b, n, out); }
void dequantize_iq1_m(const uint8_t* b, size_t n, float* out) { each_block<iq1_m_block, kIq1M>(b, n, out); }

}  // namespace gptoss::ggml_quants

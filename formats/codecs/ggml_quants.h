#pragma once
// ggml's block quantizations (the block layouts of ggml-common.h), decoded to f32 exactly as ggml's
// dequantize_row_* decode them: the same products and sums in the same order, in f32, with no
// fused multiply-add (ggml_quants.cpp is built with -ffp-contract=off), so every value is the same
// bits as ggml's. They are the reference the GPU kernels are checked against.
//
// Every multi-byte field is little-endian; "f16" is an IEEE half. A 256-element block (the
// "K" and most "IQ" types) is made of sub-blocks of 16 or 32 elements with their own small scales,
// themselves scaled by the block's f16 scale d (and dmin for the offsets).
//
//   type     elements bytes  layout (in byte order)
//   Q4_0        32     18    d f16, qs[16]: byte j = element j (low nibble) | element j+16 (high);
//                            x = (q - 8) * d
//   Q4_1        32     20    d f16, m f16, qs[16] as Q4_0; x = q * d + m
//   Q5_0        32     22    d f16, qh u32 (bit i = 5th bit of element i), qs[16] as Q4_0;
//                            x = (q - 16) * d
//   Q5_1        32     24    d f16, m f16, qh u32, qs[16]; x = q * d + m
//   IQ4_NL      32     18    d f16, qs[16] as Q4_0; x = d * kIq4nlValues[q]
//   Q2_K       256     84    scales[16] (low nibble: scale, high: min, per 16 elements), qs[64]
//                            (2 bits), d f16, dmin f16; x = (d * scale) * q - dmin * min
//   Q3_K       256    110    hmask[32] (3rd bit), qs[64] (low 2 bits), scales[12] (16 six-bit
//                            scales), d f16; x = (d * (scale - 32)) * (q - (hmask bit ? 0 : 4))
//   Q4_K       256    144    d f16, dmin f16, scales[12] (8 six-bit scales and 8 six-bit mins),
//                            qs[128]; x = (d * scale) * q - dmin * min, per 32 elements
//   Q5_K       256    176    d, dmin, scales[12] as Q4_K, qh[32] (5th bit), qs[128]
//   Q6_K       256    210    ql[128] (low 4 bits), qh[64] (high 2 bits), scales[16] int8, d f16;
//                            x = (d * scale) * (q - 32), per 16 elements
//   IQ4_XS     256    136    d f16, scales_h u16, scales_l[4] (8 six-bit scales), qs[128];
//                            x = (d * (scale - 32)) * kIq4nlValues[q], per 32 elements
//   IQ3_S      256    110    d f16, qs[64], qh[8], signs[32], scales[4] (4 bits per 32 elements)
//   IQ3_XXS    256     98    d f16, qs[64] (grid indices), 8 u32 of 4 sign indices + a 4-bit scale
//   IQ2_S      256     82    d f16, qs[32] (grid index low bits), signs[32], qh[8], scales[8]
//   IQ2_XS     256     74    d f16, 32 u16 (9-bit grid index, 7-bit sign index), scales[8]
//   IQ2_XXS    256     66    d f16, 8 x (4 grid index bytes + u32 of 4 sign indices and a scale)
//   IQ1_S      256     50    d f16, qs[32] (grid index low bits), 8 u16 (3 high bits per group of
//                            8, a 3-bit scale, the sign of the shift); x = dl * (grid + shift)
//   IQ1_M      256     56    qs[32], qh[16] (3 high index bits and a shift sign per group of 8),
//                            scales[8] (3-bit scales; the f16 d is spread over their top nibbles)
//
// The grids of the IQ2/IQ3/IQ1 types are data in iq_grids.h; ggml_quants.cpp says in code how each
// block's indices, signs and scales are unpacked.
#include <cstddef>
#include <cstdint>

namespace gptoss::ggml_quants {

// C's (int) cast of a float as x86's cvttss2si computes it: toward zero, and 0x80000000 for NaN
// and anything outside int32 (undefined in C; what ggml's quantizers get on x86-64).
inline int32_t truncate_to_int(float v) {
  return v > -0x1p31f && v < 0x1p31f ? static_cast<int32_t>(v) : INT32_MIN;
}

struct BlockShape {
  uint32_t elements;
  uint32_t bytes;
};

inline constexpr BlockShape kQ4_0{32, 18};
inline constexpr BlockShape kQ4_1{32, 20};
inline constexpr BlockShape kQ5_0{32, 22};
inline constexpr BlockShape kQ5_1{32, 24};
inline constexpr BlockShape kIq4Nl{32, 18};
inline constexpr BlockShape kQ2_K{256, 84};
inline constexpr BlockShape kQ3_K{256, 110};
inline constexpr BlockShape kQ4_K{256, 144};
inline constexpr BlockShape kQ5_K{256, 176};
inline constexpr BlockShape kQ6_K{256, 210};
inline constexpr BlockShape kIq4Xs{256, 136};
inline constexpr BlockShape kIq3S{256, 110};
inline constexpr BlockShape kIq3Xxs{256, 98};
inline constexpr BlockShape kIq2S{256, 82};
inline constexpr BlockShape kIq2Xs{256, 74};
inline constexpr BlockShape kIq2Xxs{256, 66};
inline constexpr BlockShape kIq1S{256, 50};
inline constexpr BlockShape kIq1M{256, 56};
// Types a GGUF may hold that the toolkit sizes but does not decode: Q8_1 (d, s, 32 int8), Q8_K
// (f32 d, 256 int8, 16 int16 sums; ggml's dot-product intermediate), and the ternary TQ1_0, TQ2_0.
inline constexpr BlockShape kQ8_1{32, 36};
inline constexpr BlockShape kQ8_K{256, 292};
inline constexpr BlockShape kTq1_0{256, 54};
inline constexpr BlockShape kTq2_0{256, 66};

// The 16 levels of IQ4_NL and IQ4_XS (ggml's kvalues_iq4nl).
inline constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
// IQ1_S and IQ1_M add +-kIq1Shift to every grid value of a group of 8.
inline constexpr float kIq1Shift = 0.125f;

// Each decodes `n_blocks` consecutive blocks into n_blocks * elements floats.
void dequantize_q4_0(const uint8_t* blocks, size_t n_blocks, float* out);
void dequantize_q4_1(const uint8_t* blocks, size_t n_blocks, float* out);
void dequantize_q5_0(const uint8_t* blocks, size_t n_blocks, float* out);
void dequantize_q5_1(const uint8_t* blocks, size_t n_blocks, float* out);
void dequantize_iq4_nl(const uint8_t* blocks, size_t n_blocks, float* out);
void dequantize_q2_k(const uint8_t* blocks, size_t n_blocks, float* out);
void dequantize_q3_k(const uint8_t* blocks, size_t n_blocks, float* out);
void dequantize_q4_k(const uint8_t* blocks, size_t n_blocks, float* out);
void dequantize_q5_k(const uint8_t* blocks, size_t n_blocks, float* out);
void dequantize_q6_k(const uint8_t* blocks, size_t n_blocks, float* out);
void dequantize_iq4_xs(const uint8_t* blocks, size_t n_blocks, float* out);
void dequantize_iq3_s(const uint8_t* blocks, size_t n_blocks, float* out);
void dequantize_iq3_xxs(const uint8_t* blocks, size_t n_blocks, float* out);
void dequantize_iq2_s(const uint8_t* blocks, size_t n_blocks, float* out);
void dequantize_iq2_xs(const uint8_t* blocks, size_t n_blocks, float* out);
void dequantize_iq2_xxs(const uint8_t* blocks, size_t n_blocks, float* out);
void dequantize_iq1_s(const uint8_t* blocks, size_t n_blocks, float* out);
void dequantize_iq1_m(const uint8_t* blocks, size_t n_blocks, float* out);

// ggml's reference quantizers, as llama-quantize runs them without an importance matrix
// (quantize_row_*_ref in ggml-quants.c): each encodes `n_blocks` blocks of f32 values to the same
// bytes as ggml (ggml_quantize.cpp says which float operations decide them).
//   Q4_0, Q5_0  d = (the element of largest magnitude) / -8 or / -16, level = trunc(x / d + 8.5 or
//               16.5), at most 15 or 31
//   Q4_1, Q5_1  d = (max - min) / 15 or / 31, m = min, level = trunc((x - min) / d + 0.5)
//   Q4_K, Q5_K  per 32 elements a scale and a min searched by weighted least squares (weights
//               rms + |x|; 21 or 16 trial scales), quantized to six bits against the block's d and
//               dmin, then every level chosen again against the stored scales
//   Q6_K        per 16 elements a signed scale searched over 19 trial scales (weights x^2), stored
//               as int8 against d = (largest scale) / -128, levels chosen again against them
void quantize_q4_0(const float* in, size_t n_blocks, uint8_t* out);
void quantize_q4_1(const float* in, size_t n_blocks, uint8_t* out);
void quantize_q5_0(const float* in, size_t n_blocks, uint8_t* out);
void quantize_q5_1(const float* in, size_t n_blocks, uint8_t* out);
void quantize_q4_k(const float* in, size_t n_blocks, uint8_t* out);
void quantize_q5_k(const float* in, size_t n_blocks, uint8_t* out);
void quantize_q6_k(const float* in, size_t n_blocks, uint8_t* out);

// The six-bit scale and min of 32-element sub-block j (0..7) of a Q4_K or Q5_K block's 12 scale
// bytes: j < 4 in the low 6 bits of bytes j and j + 4; j >= 4 in the nibbles of byte j + 4 with
// the top 2 bits of bytes j - 4 and j. Exposed for the tests.
struct ScaleMin {
  uint8_t scale, min;
};
ScaleMin k_scale_min(const uint8_t* scales12, unsigned j);
// The six-bit scale (0..63, before the -32) of 16-element sub-block j (0..15) of a Q3_K block's
// 12 scale bytes: the low 4 bits in a nibble of bytes 0..7, the high 2 bits in bytes 8..11.
uint8_t q3_k_scale(const uint8_t* scales12, unsigned j);

}  // namespace gptoss::ggml_quants

#include "formats/codecs/mxfp4.h"

#include <cmath>

#include "formats/codecs/ggml_quants.h"  // truncate_to_int
#include "formats/core/dtype.h"
#include "formats/core/mapped_file.h"  // load_u64, store_u64

namespace gptoss::mxfp4 {

float scale_value(uint8_t scale_byte) { return std::ldexp(1.0f, static_cast<int>(scale_byte) - 127); }
float ggml_half_scale_value(uint8_t scale_byte) { return std::ldexp(1.0f, static_cast<int>(scale_byte) - 128); }

namespace {
// The repacks move whole nibbles between bytes, eight bytes at a time in 64-bit words (SWAR):
// a handful of shifts and masks per block instead of a loop over 32 nibbles.
constexpr uint64_t kLowNibbles = 0x0F0F0F0F0F0F0F0Full;
constexpr uint64_t kHighNibbles = 0xF0F0F0F0F0F0F0F0ull;

// Bytes 0..3 of x to bytes 0, 2, 4, 6 of the result (the others zero).
inline uint64_t spread_bytes(uint64_t x) {
  x &= 0xFFFFFFFFull;
  x = (x | (x << 16)) & 0x0000FFFF0000FFFFull;
  return (x | (x << 8)) & 0x00FF00FF00FF00FFull;
}
// Bytes 0, 2, 4, 6 of x to bytes 0..3 of the result (the inverse of spread_bytes).
inline uint64_t gather_even_bytes(uint64_t x) {
  x &= 0x00FF00FF00FF00FFull;
  x = (x | (x >> 8)) & 0x0000FFFF0000FFFFull;
  return (x | (x >> 16)) & 0xFFFFFFFFull;
}

// OpenAI byte k holds elements 2k | 2k+1 << 4 (a = bytes 0..7, b = bytes 8..15, elements 16..31);
// ggml byte j holds elements j | j+16 << 4. So ggml byte 2k = low nibbles of a_k and b_k, ggml
// byte 2k+1 = their high nibbles.
inline void oai_to_ggml_qs(const uint8_t* oai16, uint8_t* qs16) {
  const uint64_t a = load_u64(oai16), b = load_u64(oai16 + 8);
  const uint64_t even = (a & kLowNibbles) | ((b & kLowNibbles) << 4);
  const uint64_t odd = ((a >> 4) & kLowNibbles) | (b & kHighNibbles);
  store_u64(qs16, spread_bytes(even) | (spread_bytes(odd) << 8));
  store_u64(qs16 + 8, spread_bytes(even >> 32) | (spread_bytes(odd >> 32) << 8));
}

inline void ggml_qs_to_oai(const uint8_t* qs16, uint8_t* oai16) {
  const uint64_t lo = load_u64(qs16), hi = load_u64(qs16 + 8);
  const uint64_t even = gather_even_bytes(lo) | (gather_even_bytes(hi) << 32);
  const uint64_t odd = gather_even_bytes(lo >> 8) | (gather_even_bytes(hi >> 8) << 32);
  store_u64(oai16, (even & kLowNibbles) | ((odd & kLowNibbles) << 4));
  store_u64(oai16 + 8, ((even >> 4) & kLowNibbles) | (odd & kHighNibbles));
}
}  // namespace

void oai_block_to_ggml(const uint8_t* oai_block16, uint8_t scale_byte, uint8_t* ggml_block17) {
  ggml_block17[0] = scale_byte;
  oai_to_ggml_qs(oai_block16, ggml_block17 + 1);
}

void ggml_block_to_oai(const uint8_t* ggml_block17, uint8_t* oai_block16, uint8_t* scale_byte) {
  *scale_byte = ggml_block17[0];
  ggml_qs_to_oai(ggml_block17 + 1, oai_block16);
}

void oai_blocks_to_ggml(const uint8_t* oai_blocks16, const uint8_t* scales, size_t n_blocks, uint8_t* ggml_blocks17) {
  for (size_t b = 0; b < n_blocks; ++b) oai_block_to_ggml(oai_blocks16 + 16 * b, scales[b], ggml_blocks17 + 17 * b);
}

void ggml_blocks_to_oai(const uint8_t* ggml_blocks17, size_t n_blocks, uint8_t* oai_blocks16) {
  for (size_t b = 0; b < n_blocks; ++b) ggml_qs_to_oai(ggml_blocks17 + 17 * b + 1, oai_blocks16 + 16 * b);
}

void ggml_scales(const uint8_t* ggml_blocks17, size_t n_blocks, uint8_t* scales) {
  for (size_t b = 0; b < n_blocks; ++b) scales[b] = ggml_blocks17[17 * b];
}

namespace {
// The block's amax as ggml takes it: `if (amax < fabsf(v)) amax = fabsf(v)`, so a NaN never wins.
float block_amax(const float* x) {
  float amax = 0.0f;
  for (unsigned i = 0; i < kMxfp4BlockElements; ++i)
    if (amax < std::fabs(x[i])) amax = std::fabs(x[i]);
  return amax;
}

uint8_t exponent_of(float amax) {
  if (!(amax > 0.0f)) return 0;
  return static_cast<uint8_t>(ggml_quants::truncate_to_int(std::floor(std::log2(amax)) - 2.0f + 127.0f));
}

// ggml's best_index_mxfp4: the first code with the smallest |kvalues[code] * d - x|, each
// difference rounded to f32 as there.
uint8_t searched_code(float x, float d) {
  uint8_t best = 0;
  float best_error = std::fabs(static_cast<float>(kGgmlKvalues[0]) * d - x);
  for (uint8_t c = 1; c < 16; ++c) {
    const float error = std::fabs(static_cast<float>(kGgmlKvalues[c]) * d - x);
    if (error < best_error) {
      best = c;
      best_error = error;
    }
  }
  return best;
}

// The same code for a finite block: the levels 0, 1, 2, 3, 4, 6, 8, 12 (times d) are codes 0..7
// in order, so |x|'s code is the number of midpoints below it (a tie stays on the lower level);
// a negative x takes the negative code of the same magnitude unless that is zero.
uint8_t nearest_code(float x, const float (&midpoints)[7]) {
  const float magnitude = std::fabs(x);
  unsigned code = 0;
  for (float m : midpoints) code += magnitude > m;
  return static_cast<uint8_t>(code != 0 && x < 0.0f ? code | 8 : code);
}

// The 32 codes of one block, in element order, and its scale byte.
uint8_t block_codes(const float* x, uint8_t (&codes)[kMxfp4BlockElements]) {
  const float amax = block_amax(x);
  const uint8_t e = exponent_of(amax);
  const float d = ggml_half_scale_value(e);
  if (std::isinf(amax) || std::isinf(12.0f * d)) {  // where the shortcut's premises fail (mxfp4.h)
    for (unsigned i = 0; i < kMxfp4BlockElements; ++i) codes[i] = searched_code(x[i], d);
    return e;
  }
  float midpoints[7];
  for (unsigned c = 0; c < 7; ++c)
    midpoints[c] = 0.5f * static_cast<float>(kGgmlKvalues[c] + kGgmlKvalues[c + 1]) * d;
  for (unsigned i = 0; i < kMxfp4BlockElements; ++i) codes[i] = nearest_code(x[i], midpoints);
  return e;
}
}  // namespace

uint8_t shared_exponent(const float* block32) { return exponent_of(block_amax(block32)); }

void shared_exponents(const float* in, size_t n_blocks, uint8_t* scales) {
  for (size_t b = 0; b < n_blocks; ++b) scales[b] = shared_exponent(in + kMxfp4BlockElements * b);
}

void quantize_ggml(const float* in, size_t n_blocks, uint8_t* blocks17) {
  for (size_t b = 0; b < n_blocks; ++b) {
    uint8_t codes[kMxfp4BlockElements];
    uint8_t* block = blocks17 + kMxfp4GgmlBlockBytes * b;
    block[0] = block_codes(in + kMxfp4BlockElements * b, codes);
    for (unsigned j = 0; j < 16; ++j) block[1 + j] = static_cast<uint8_t>(codes[j] | codes[j + 16] << 4);
  }
}

void quantize_oai(const float* in, size_t n_blocks, uint8_t* blocks16, uint8_t* scales) {
  for (size_t b = 0; b < n_blocks; ++b) {
    uint8_t codes[kMxfp4BlockElements];
    uint8_t* block = blocks16 + kMxfp4OaiBlockBytes * b;
    scales[b] = block_codes(in + kMxfp4BlockElements * b, codes);
    for (unsigned j = 0; j < 16; ++j) block[j] = static_cast<uint8_t>(codes[2 * j] | codes[2 * j + 1] << 4);
  }
}

void dequantize_oai(const uint8_t* blocks, const uint8_t* scales, size_t n_blocks, float* out) {
  for (size_t b = 0; b < n_blocks; ++b) {
    const float s = scale_value(scales[b]);
    const uint8_t* block = blocks + 16 * b;
    for (unsigned j = 0; j < 16; ++j) {
      out[32 * b + 2 * j] = kFp4Values[block[j] & 0x0f] * s;
      out[32 * b + 2 * j + 1] = kFp4Values[block[j] >> 4] * s;
    }
  }
}

void dequantize_ggml(const uint8_t* blocks17, size_t n_blocks, float* out) {
  for (size_t b = 0; b < n_blocks; ++b) {
    const uint8_t* block = blocks17 + 17 * b;
    const float d = ggml_half_scale_value(block[0]);
    for (unsigned j = 0; j < 16; ++j) {
      out[32 * b + j] = static_cast<float>(kGgmlKvalues[block[1 + j] & 0x0f]) * d;
      out[32 * b + j + 16] = static_cast<float>(kGgmlKvalues[block[1 + j] >> 4]) * d;
    }
  }
}

}  // namespace gptoss::mxfp4

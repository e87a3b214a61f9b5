#include "formats/codecs/mxfp4.h"

#include <cmath>

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

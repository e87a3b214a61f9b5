#pragma once
// MXFP4 in its two on-disk layouts.
//
// OpenAI / Hugging Face: a block of 32 elements is 16 bytes; byte j holds element 2j in its LOW
// nibble and element 2j+1 in its HIGH nibble. The scale is a separate E8M0 byte s, value
// FP4[code] * 2^(s - 127).
//
// ggml (GGUF type 39): a block is 17 bytes, the scale byte e first, then 16 bytes where byte j
// holds element j in its LOW nibble and element j+16 in its HIGH nibble. Value
// kvalues[code] * 2^(e - 128) with kvalues = 2 * FP4, i.e. the same number (see kGgmlKvalues for
// the two exceptions): the scale byte is the same byte in both layouts; only the nibble positions
// move.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace gptoss::mxfp4 {

// E2M1 values by 4-bit code; bit 3 is the sign.
inline constexpr float kFp4Values[16] = {+0.0f, +0.5f, +1.0f, +1.5f, +2.0f, +3.0f, +4.0f, +6.0f,
                                         -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

// 2^(s - 127) exactly (s = 0 and 1 give subnormals, 255 gives 2^128 = inf as the references do).
float scale_value(uint8_t scale_byte);

// ggml decodes its layout as kvalues[code] * 2^(e - 128) with kvalues = 2 x E2M1 as int8: the
// same numbers, except that code 8 (E2M1's -0) is +0, and that e = 255 gives the finite 2^127
// times kvalues where 2^(e - 127) overflows. dequantize_ggml computes it that way, bit for bit.
inline constexpr auto kGgmlKvalues = [] {
  std::array<int8_t, 16> v{};
  for (size_t c = 0; c < v.size(); ++c) v[c] = static_cast<int8_t>(2 * kFp4Values[c]);
  return v;
}();
float ggml_half_scale_value(uint8_t scale_byte);  // 2^(e - 128)

// Element `index` (0..31) of one block's code, in either layout.
inline uint8_t oai_code(const uint8_t* block16, unsigned index) {
  uint8_t b = block16[index / 2];
  return (index & 1) ? (b >> 4) : (b & 0x0f);
}
inline uint8_t ggml_code(const uint8_t* qs16, unsigned index) {
  uint8_t b = qs16[index % 16];
  return index < 16 ? (b & 0x0f) : (b >> 4);
}

// Repack one block between the layouts. The scale byte is copied unchanged.
void oai_block_to_ggml(const uint8_t* oai_block16, uint8_t scale_byte, uint8_t* ggml_block17);
void ggml_block_to_oai(const uint8_t* ggml_block17, uint8_t* oai_block16, uint8_t* scale_byte);
// The same for `n_blocks` consecutive blocks: OpenAI blocks + their scale bytes -> ggml blocks;
// ggml blocks -> OpenAI blocks; ggml blocks -> their scale bytes.
void oai_blocks_to_ggml(const uint8_t* oai_blocks16, const uint8_t* scales, size_t n_blocks, uint8_t* ggml_blocks17);
void ggml_blocks_to_oai(const uint8_t* ggml_blocks17, size_t n_blocks, uint8_t* oai_blocks16);
void ggml_scales(const uint8_t* ggml_blocks17, size_t n_blocks, uint8_t* scales);

// Dequantize `n_blocks` consecutive blocks (32 * n_blocks floats).
void dequantize_oai(const uint8_t* blocks, const uint8_t* scales, size_t n_blocks, float* out);
void dequantize_ggml(const uint8_t* blocks17, size_t n_blocks, float* out);

}  // namespace gptoss::mxfp4

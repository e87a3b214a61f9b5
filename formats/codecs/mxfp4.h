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

// ggml's reference quantizer (quantize_row_mxfp4_ref, what llama-quantize writes for MXFP4), as
// facts of its rule:
//   - the block's amax is the largest |x| (a NaN never wins);
//   - the scale byte is e = (uint8_t)(floorf(log2f(amax)) - 2 + 127), 0 for amax = 0; the cast
//     as x86 computes it (truncate_to_int, then the low byte), so amax below 2^-125 wraps to a
//     byte of 232 .. 255 (every code then 0) and an infinite amax gives 0;
//   - each element's code is the first of the 16 (in code order) whose kvalues[code] * 2^(e - 128)
//     is nearest to x: ties go to the lower code, so to the smaller magnitude, and -0 and the
//     values that round to zero get code 0, never 8.
// The nearest code comes from comparisons with the midpoints between the levels, which gives the
// same codes as ggml's search over all 16 wherever the block and its levels are finite (the
// differences it compares are then exact between neighbouring levels, Sterbenz). The other blocks
// run ggml's search itself: one holding an infinity (rounding makes every finite difference equal,
// so code 0 wins) and one whose top levels overflow f32 (scale bytes 253 .. 255: an amax within
// rounding of f32's largest, where log2f gives 128, or a wrapped byte; an infinite level is never
// nearest).
uint8_t shared_exponent(const float* block32);
// Quantizes `n_blocks` blocks of 32 values: in ggml's layout (the DType table's encoder), as the
// OpenAI pair (16-byte blocks and their scale bytes), or only the scale bytes of the pair.
void quantize_ggml(const float* in, size_t n_blocks, uint8_t* blocks17);
void quantize_oai(const float* in, size_t n_blocks, uint8_t* blocks16, uint8_t* scales);
void shared_exponents(const float* in, size_t n_blocks, uint8_t* scales);

// Dequantize `n_blocks` consecutive blocks (32 * n_blocks floats).
void dequantize_oai(const uint8_t* blocks, const uint8_t* scales, size_t n_blocks, float* out);
void dequantize_ggml(const uint8_t* blocks17, size_t n_blocks, float* out);

}  // namespace gptoss::mxfp4

#pragma once
// ggml Q8_0: blocks of 32 elements stored as an f16 scale d followed by 32 int8 q; x = q * d.
// The quantizer is bit-exact with ggml's quantize_row_q8_0_ref: d = amax/127 in f32,
// q = roundf(x * (1/d)) (half away from zero), and d stored as f16 (round to nearest even).
#include <cstddef>
#include <cstdint>

namespace gptoss::q8_0 {

void quantize(const float* in, size_t n_blocks, uint8_t* out34);
void dequantize(const uint8_t* in34, size_t n_blocks, float* out);

}  // namespace gptoss::q8_0

#include "formats/codecs/mxfp4.h"

#include <cmath>

namespace gptoss::mxfp4 {

float scale_value(uint8_t scale_byte) { return std::ldexp(1.0f, static_cast<int>(scale_byte) - 127); }

void oai_block_to_ggml(const uint8_t* oai_block16, uint8_t scale_byte, uint8_t* ggml_block17) {
  ggml_block17[0] = scale_byte;
  for (unsigned j = 0; j < 16; ++j) {
    uint8_t lo = oai_code(oai_block16, j);
    uint8_t hi = oai_code(oai_block16, j + 16);
    ggml_block17[1 + j] = static_cast<uint8_t>(lo | (hi << 4));
  }
}

void ggml_block_to_oai(const uint8_t* ggml_block17, uint8_t* oai_block16, uint8_t* scale_byte) {
  *scale_byte = ggml_block17[0];
  const uint8_t* qs = ggml_block17 + 1;
  for (unsigned j = 0; j < 16; ++j) {
    uint8_t even = ggml_code(qs, 2 * j);
    uint8_t odd = ggml_code(qs, 2 * j + 1);
    oai_block16[j] = static_cast<uint8_t>(even | (odd << 4));
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
    const float s = scale_value(block[0]);
    for (unsigned j = 0; j < 16; ++j) {
      out[32 * b + j] = kFp4Values[block[1 + j] & 0x0f] * s;
      out[32 * b + j + 16] = kFp4Values[block[1 + j] >> 4] * s;
    }
  }
}

}  // namespace gptoss::mxfp4

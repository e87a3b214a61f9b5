#include "formats/codecs/q8_0.h"

#include <cmath>

#include "formats/core/float16.h"
#include "formats/core/mapped_file.h"

namespace gptoss::q8_0 {

void quantize(const float* in, size_t n_blocks, uint8_t* out34) {
  for (size_t b = 0; b < n_blocks; ++b) {
    const float* x = in + 32 * b;
    uint8_t* block = out34 + 34 * b;
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_u16(block, f32_to_f16(d));
    for (int j = 0; j < 32; ++j) block[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::roundf(x[j] * id)));
  }
}

void dequantize(const uint8_t* in34, size_t n_blocks, float* out) {
  for (size_t b = 0; b < n_blocks; ++b) {
    const uint8_t* block = in34 + 34 * b;
    const float d = f16_to_f32(load_u16(block));
    for (int j = 0; j < 32; ++j) out[32 * b + j] = static_cast<float>(static_cast<int8_t>(block[2 + j])) * d;
  }
}

}  // namespace gptoss::q8_0

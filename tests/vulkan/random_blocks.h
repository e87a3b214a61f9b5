#pragma once
// Blocks of ggml's quantizations for the kernel tests and the kernel bench, which have no
// quantizer for most types: valid blocks with every bit pattern the decoders must handle.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "formats/core/dtype.h"
#include "formats/core/float16.h"

namespace gptoss::test {

// Random blocks of one of ggml's quantizations: random bytes (every bit pattern of the quants,
// scales, signs and grid indices) with the block's f16 fields (d, dmin, m: ggml_quants.h) set to
// normal numbers of 2^-9 .. 2^-4, so every value is finite and f16's subnormals stay out of it.
inline std::vector<uint8_t> random_blocks(DType type, size_t elements, uint32_t seed) {
  const auto& info = dtype_info(type);
  std::mt19937 rng(seed);
  std::vector<uint8_t> bytes(elements / info.block_elements * info.block_bytes);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  const auto half = [&] {
    const float magnitude = std::ldexp(1.0f + static_cast<float>(rng() % 1024) / 1024, -4 - static_cast<int>(rng() % 6));
    return f32_to_f16(rng() % 2 ? magnitude : -magnitude);
  };
  std::vector<uint32_t> fields = {0};
  if (type == DType::Q4_1 || type == DType::Q5_1 || type == DType::Q4_K || type == DType::Q5_K) fields = {0, 2};
  if (type == DType::Q2_K) fields = {80, 82};
  if (type == DType::Q3_K) fields = {108};
  if (type == DType::Q6_K) fields = {208};
  if (type == DType::IQ1_M) fields = {};
  for (size_t at = 0; at < bytes.size(); at += info.block_bytes) {
    for (uint32_t f : fields) {
      const uint16_t h = half();
      std::memcpy(&bytes[at + f], &h, 2);
    }
    if (type == DType::IQ1_M) {  // d in the top nibbles of the four scale words (bytes 49, 51, 53, 55)
      const uint16_t h = half();
      for (uint32_t i = 0; i < 4; ++i)
        bytes[at + 49 + 2 * i] = static_cast<uint8_t>((bytes[at + 49 + 2 * i] & 0x0F) | (((h >> (4 * i)) & 0xF) << 4));
    }
  }
  return bytes;
}

}  // namespace gptoss::test

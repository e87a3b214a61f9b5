#pragma once
// Blocks of ggml's quantizations for the kernel tests and the kernel bench, which have no
// quantizer for most types: valid blocks with every bit pattern the decoders must handle.
#include <algorithm>
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
// normal numbers of 2^(-9 + shift) .. 2^(-4 + shift), so every value is finite, and no smaller than
// 2^-14, so f16's subnormals stay out of it. The same seed with another shift (-5 .. 10) gives the
// same blocks with every value times 2^shift; with a smaller one the fields below 2^-14 take 2^-14.
inline std::vector<uint8_t> random_blocks(DType type, size_t elements, uint32_t seed, int shift = 0) {
  const auto& info = dtype_info(type);
  std::mt19937 rng(seed);
  std::vector<uint8_t> bytes(elements / info.block_elements * info.block_bytes);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  const auto half = [&] {
    const float magnitude = std::ldexp(1.0f + static_cast<float>(rng() % 1024) / 1024, std::max(-14, -4 + shift - static_cast<int>(rng() % 6)));
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
    if (type == DType::Q4_1 || type == DType::Q5_1) {
      // m = -d * levels / 2: the levels centred on 0, as a quantizer makes them for values of mean
      // 0 (a random m of d's size would shift every value of a block one way: products of such
      // rows cancel far more than a model's do, and the tests' f32 sums lose digits to it).
      uint16_t d;
      std::memcpy(&d, &bytes[at], 2);
      const uint16_t m = f32_to_f16(-f16_to_f32(d) * (type == DType::Q4_1 ? 8.0f : 16.0f));
      std::memcpy(&bytes[at + 2], &m, 2);
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

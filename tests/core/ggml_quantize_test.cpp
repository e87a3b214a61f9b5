// ggml's reference quantizers (formats/codecs/ggml_quantize.cpp): the bytes llama.cpp's own
// llama-quantize makes of fixed values (data/quantizer-goldens, made by
// scripts/make_quantizer_goldens.sh), and every block decoded again within its type's error bound.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "formats/codecs/float_codec.h"
#include "formats/core/dtype.h"
#include "tests/test_support.h"
#include "verify/sha256.h"

namespace gptoss {
namespace {
using test::data_dir;
using test::read_file_bytes;

std::filesystem::path goldens() { return data_dir() / "quantizer-goldens"; }

std::vector<float> golden_values() {
  const auto bytes = read_file_bytes(goldens() / "values.f32");
  std::vector<float> values(bytes.size() / 4);
  std::memcpy(values.data(), bytes.data(), values.size() * 4);
  return values;
}

// expected.sha256: "<type> <sha256 of llama-quantize's bytes>" per line.
std::map<DType, std::string> golden_hashes() {
  std::ifstream in(goldens() / "expected.sha256");
  std::map<DType, std::string> hashes;
  std::string name, hash;
  while (in >> name >> hash) {
    const auto type = dtype_from_name(name);
    EXPECT_TRUE(type) << name;
    if (type) hashes[*type] = hash;
  }
  return hashes;
}

std::vector<uint8_t> encode(DType type, const std::vector<float>& values) {
  std::vector<uint8_t> bytes(*dtype_byte_size(type, values.size()));
  encode_from_f32(type, values.data(), values.size(), bytes.data());
  return bytes;
}

TEST(GgmlQuantize, BytesEqualLlamaQuantizeWithoutImatrix) {
  const auto values = golden_values();
  ASSERT_EQ(values.size(), 32u * 256u);
  const auto hashes = golden_hashes();
  ASSERT_EQ(hashes.size(), 8u);  // Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K
  for (const auto& [type, hash] : hashes) {
    ASSERT_TRUE(is_encodable(type)) << dtype_name(type);
    EXPECT_EQ(sha256_hex(encode(type, values)), hash) << dtype_name(type);
  }
}

// The largest |decoded - value| of each block, over the block's largest |value| (amax), stays
// within the type's bound: half a level step (amax / 127 for Q8_0, at most range / 30 = amax / 15
// for Q4_1 and Q4_K, amax / 31 for Q5_1 and Q5_K, amax / 64 for Q6_K's signed levels), a whole
// step for Q4_0 and Q5_0 (the level beyond the largest magnitude is clipped), plus what rounding
// the scale to f16 costs at the largest level (2^-11 relative); the K-quants' six-bit sub-block
// scales get 10% more. Blocks whose amax is 0.5 .. 10^4 (scales in f16's normal range), of the
// golden values scaled by 2^-8 .. 2^12.
TEST(GgmlQuantize, RoundTripStaysWithinTheTypesStep) {
  constexpr double f16 = 1.0 / 2048;
  const std::map<DType, double> bound = {
      {DType::Q8_0, (0.5 + 127 * f16) / 127}, {DType::Q4_0, (1 + 8 * f16) / 8},   {DType::Q5_0, (1 + 16 * f16) / 16},
      {DType::Q4_1, 1.0 / 15 + 3 * f16},      {DType::Q5_1, 1.0 / 31 + 3 * f16}, {DType::Q4_K, 1.1 / 15},
      {DType::Q5_K, 1.1 / 31},                {DType::Q6_K, 1.1 / 64},
  };
  auto values = golden_values();
  const size_t golden = values.size();
  for (int e = -8; e <= 12; e += 2)  // the same values scaled by 2^e
    for (size_t i = 0; i < golden; ++i) values.push_back(std::ldexp(values[i], e));
  for (const auto& [type, limit] : bound) {
    const uint32_t n = dtype_info(type).block_elements;
    const auto bytes = encode(type, values);
    std::vector<float> back(values.size());
    decode_to_f32(type, bytes.data(), values.size(), back.data());
    double worst = 0;
    for (size_t b = 0; b < values.size() / n; ++b) {
      double amax = 0, err = 0;
      for (size_t i = b * n; i < (b + 1) * n; ++i) {
        amax = std::max(amax, std::fabs(static_cast<double>(values[i])));
        err = std::max(err, std::fabs(static_cast<double>(back[i]) - values[i]));
      }
      if (amax < 0.5 || amax > 1e4) continue;
      worst = std::max(worst, err / amax);
    }
    EXPECT_LE(worst, limit) << dtype_name(type);
    EXPECT_GT(worst, 0) << dtype_name(type);
  }
}

}  // namespace
}  // namespace gptoss

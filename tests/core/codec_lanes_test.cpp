// The vectorized codec loops (formats/codecs/lanes.h) give exactly what the scalar definitions
// give: every 16-bit input, the rounding boundaries of every half, and many other floats.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "formats/codecs/float_codec.h"
#include "formats/codecs/q8_0.h"
#include "formats/core/float16.h"
#include "formats/core/mapped_file.h"

namespace gptoss {
namespace {

// Floats that probe every rounding decision: each half's value, the midpoints to its neighbours
// and one step either side of them, specials, and random bit patterns.
std::vector<float> probing_floats() {
  std::vector<float> out;
  auto add_bits = [&](uint32_t bits) { out.push_back(std::bit_cast<float>(bits)); };
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint32_t bits = std::bit_cast<uint32_t>(f16_to_f32(static_cast<uint16_t>(h)));
    for (int32_t delta : {0, 1, -1, 0x1000, 0x0fff, 0x1001, -0x1000, -0x0fff, -0x1001, 0x2000, 0xffff, 0x8000, 0x7fff})
      add_bits(bits + static_cast<uint32_t>(delta));
  }
  for (uint32_t e = 0; e < 256; ++e)  // every exponent, with a few mantissas
    for (uint32_t m : {0u, 1u, 0x400000u, 0x7fffffu, 0x001000u, 0x000fffu, 0x2000u, 0x3000u})
      for (uint32_t sign : {0u, 0x80000000u}) add_bits(sign | (e << 23) | m);
  std::mt19937 rng(5);
  for (int i = 0; i < 1'000'000; ++i) add_bits(static_cast<uint32_t>(rng()));
  return out;
}

TEST(CodecLanes, F16DecodeEqualsTheScalarOneForEveryHalf) {
  std::vector<uint8_t> halves(2 * 0x10000);
  for (uint32_t h = 0; h < 0x10000; ++h) store_u16(&halves[2 * h], static_cast<uint16_t>(h));
  std::vector<float> out(0x10000);
  decode_to_f32(DType::F16, halves.data(), out.size(), out.data());
  for (uint32_t h = 0; h < 0x10000; ++h)
    ASSERT_EQ(std::bit_cast<uint32_t>(out[h]), std::bit_cast<uint32_t>(f16_to_f32(static_cast<uint16_t>(h)))) << std::hex << h;
}

TEST(CodecLanes, F16AndBf16EncodeEqualTheScalarOnes) {
  const auto values = probing_floats();
  for (DType type : {DType::F16, DType::BF16}) {
    std::vector<uint8_t> out(2 * values.size());
    encode_from_f32(type, values.data(), values.size(), out.data());
    size_t wrong = 0;
    for (size_t i = 0; i < values.size(); ++i) {
      const uint16_t want = type == DType::F16 ? f32_to_f16(values[i]) : f32_to_bf16(values[i]);
      if (load_u16(&out[2 * i]) != want && wrong++ < 5)
        ADD_FAILURE() << dtype_name(type) << " of 0x" << std::hex << std::bit_cast<uint32_t>(values[i]) << ": 0x"
                      << load_u16(&out[2 * i]) << ", scalar 0x" << want;
    }
    EXPECT_EQ(wrong, 0u) << dtype_name(type);
    std::vector<float> back(values.size());
    decode_to_f32(type, out.data(), values.size(), back.data());  // and back, through the BF16 lanes too
    for (size_t i = 0; i < values.size(); ++i) {
      const uint16_t code = load_u16(&out[2 * i]);
      ASSERT_EQ(std::bit_cast<uint32_t>(back[i]),
                std::bit_cast<uint32_t>(type == DType::F16 ? f16_to_f32(code) : bf16_to_f32(code)));
    }
  }
}

// ggml's quantize_row_q8_0_ref as written, the definition the goldens check.
void reference_q8_0(const float* x, uint8_t* block) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_u16(block, f32_to_f16(d));
  for (int j = 0; j < 32; ++j) {
    const float v = x[j] * id;
    // The C cast of NaN or of a value beyond int32 is undefined; x86 (cvttss2si) gives INT32_MIN,
    // whose low byte is 0. Values between 128 and 2^31 (an id from a subnormal d) wrap.
    block[2 + j] = std::fabs(v) < 0x1p31f ? static_cast<uint8_t>(static_cast<int64_t>(std::roundf(v))) : 0;
  }
}

TEST(CodecLanes, Q8_0EqualsGgmlsScalarQuantizer) {
  std::mt19937 rng(11);
  std::vector<float> x;
  auto block_of = [&](auto&& value) {
    for (int j = 0; j < 32; ++j) x.push_back(value(j));
  };
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (int b = 0; b < 20000; ++b) block_of([&](int) { return normal(rng); });
  // Halves exactly: amax 127 makes id 1, so k + 0.5 must round away from zero.
  for (int b = 0; b < 64; ++b) block_of([&](int j) { return j == 0 ? 127.0f : static_cast<float>(j + b % 8 - 40) + 0.5f; });
  for (int b = 0; b < 64; ++b) block_of([&](int j) { return j == 5 ? -127.0f : -(static_cast<float>(j) + 0.5f) * (b % 2 ? 1 : -1); });
  block_of([](int) { return 0.0f; });
  block_of([](int j) { return j % 2 ? -0.0f : 0.0f; });
  block_of([](int j) { return std::ldexp(static_cast<float>(j), -140); });  // subnormals: d underflows
  block_of([](int j) { return j == 3 ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(j); });
  block_of([](int j) { return j == 7 ? std::numeric_limits<float>::infinity() : static_cast<float>(j); });
  block_of([](int j) { return j == 7 ? -std::numeric_limits<float>::infinity() : 1.0f; });
  block_of([](int) { return std::numeric_limits<float>::quiet_NaN(); });
  block_of([](int j) { return j == 0 ? 3.0e38f : 1.0f; });
  for (int b = 0; b < 2000; ++b) block_of([&](int) { return std::bit_cast<float>(static_cast<uint32_t>(rng()) & 0xbf7fffffu); });
  const size_t blocks = x.size() / 32;
  std::vector<uint8_t> ours(34 * blocks), want(34 * blocks);
  q8_0::quantize(x.data(), blocks, ours.data());
  for (size_t b = 0; b < blocks; ++b) reference_q8_0(&x[32 * b], &want[34 * b]);
  for (size_t b = 0; b < blocks; ++b)
    ASSERT_TRUE(std::equal(ours.begin() + 34 * b, ours.begin() + 34 * b + 34, want.begin() + 34 * b)) << "block " << b;
  // Dequantizing: q * d.
  std::vector<float> back(x.size());
  q8_0::dequantize(ours.data(), blocks, back.data());
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(back[i]),
              std::bit_cast<uint32_t>(static_cast<float>(static_cast<int8_t>(ours[34 * (i / 32) + 2 + i % 32])) *
                                      f16_to_f32(load_u16(&ours[34 * (i / 32)]))));
}

TEST(CodecLanes, MeasuredDifferencesEqualTheScalarDefinition) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int round = 0; round < 50; ++round) {
    const size_t n = 4096 + static_cast<size_t>(round);  // lanes and a scalar tail
    std::vector<float> values(n), decoded(n);
    for (size_t i = 0; i < n; ++i) {
      values[i] = normal(rng) * std::ldexp(1.0f, round % 20 - 10);
      const uint32_t noise = rng() % 4;
      decoded[i] = noise == 0 ? values[i] : std::bit_cast<float>(std::bit_cast<uint32_t>(values[i]) + noise * 977);
    }
    if (round % 5 == 1) values[7] = decoded[7] = std::numeric_limits<float>::infinity();  // inf - inf: NaN, changed
    if (round % 5 == 2) decoded[100] = std::numeric_limits<float>::quiet_NaN();
    if (round % 5 == 3) values[n - 1] = std::numeric_limits<float>::quiet_NaN();
    ValueDifferences ours{3, 1e-30, 1e-30};
    measure_differences(values.data(), decoded.data(), n, ours);
    uint64_t changed = 3;
    double max_error = 1e-30, max_value = 1e-30;
    for (size_t i = 0; i < n; ++i) {
      const double e = std::fabs(static_cast<double>(decoded[i]) - values[i]);
      if (e > 0 || std::isnan(e)) ++changed;
      if (e > max_error) max_error = e;
      max_value = std::max(max_value, static_cast<double>(std::fabs(values[i])));
    }
    EXPECT_EQ(ours.changed, changed) << round;
    EXPECT_EQ(ours.max_abs_error, max_error) << round;
    EXPECT_EQ(ours.max_abs_value, max_value) << round;
  }
}

TEST(CodecLanes, Bf16ScalingEqualsTheScalarDefinition) {
  const auto values = probing_floats();
  std::vector<uint8_t> bf16(2 * values.size());
  for (size_t i = 0; i < values.size(); ++i) store_u16(&bf16[2 * i], f32_to_bf16(values[i]));
  for (float scale : {0.5f, 0.25f, 2.0f, 4.0f}) {
    auto ours = bf16;
    const uint64_t inexact = scale_bf16_in_place(ours.data(), values.size(), scale);
    uint64_t want_inexact = 0;
    for (size_t i = 0; i < values.size(); ++i) {
      const float x = bf16_to_f32(load_u16(&bf16[2 * i]));
      const uint16_t result = f32_to_bf16(x * scale);
      if (!std::isnan(x) && bf16_to_f32(result) * (1.0f / scale) != x) ++want_inexact;
      ASSERT_EQ(load_u16(&ours[2 * i]), result) << i;
    }
    EXPECT_EQ(inexact, want_inexact) << scale;
    EXPECT_GT(inexact, 0u);  // subnormals and overflows are among the probes
  }
}

}  // namespace
}  // namespace gptoss

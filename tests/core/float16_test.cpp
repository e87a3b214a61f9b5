#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>

#include "formats/core/float16.h"

namespace gptoss {
namespace {

// The compiler's own _Float16 conversions are the independent reference where the compiler has
// them (gcc 12 on x86-64); clang before 15 has no _Float16 on x86, so there the reference is the
// IEEE definition itself: the value by ldexp, and rounding to the nearest of all finite halves
// (ties to the even bit pattern, overflow from 65520 up).
#if defined(__FLT16_MANT_DIG__)
float reference_half_to_float(uint16_t h) { return static_cast<float>(std::bit_cast<_Float16>(h)); }
uint16_t reference_float_to_half(float f) { return std::bit_cast<uint16_t>(static_cast<_Float16>(f)); }
#else
double half_magnitude(uint16_t h) {
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  if (exponent == 0) return std::ldexp(mantissa, -24);
  if (exponent == 31) return mantissa == 0 ? INFINITY : NAN;
  return std::ldexp(1024 + mantissa, exponent - 25);
}
float reference_half_to_float(uint16_t h) {
  const double m = half_magnitude(h & 0x7fff);
  return static_cast<float>((h & 0x8000) ? -m : m);
}
uint16_t reference_float_to_half(float f) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(f));
  if (a >= 65520.0) return sign | 0x7c00;
  uint16_t lo = 0, hi = 0x7bff;  // largest finite half with magnitude <= a
  while (lo < hi) {
    const uint16_t mid = static_cast<uint16_t>((lo + hi + 1) / 2);
    if (half_magnitude(mid) <= a) lo = mid; else hi = static_cast<uint16_t>(mid - 1);
  }
  if (lo == 0x7bff) return sign | lo;
  const double below = a - half_magnitude(lo), above = half_magnitude(static_cast<uint16_t>(lo + 1)) - a;
  const bool up = above < below || (above == below && (lo & 1));
  return static_cast<uint16_t>(sign | (up ? lo + 1 : lo));
}
#endif

TEST(Float16, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_f16(f), h) << "half 0x" << std::hex << h;
    ASSERT_EQ(f, reference_half_to_float(static_cast<uint16_t>(h))) << std::hex << h;
  }
}

TEST(Float16, MatchesCompilerConversionOnRandomFloats) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 2000000; ++i) {
    const float f = std::bit_cast<float>(bits(rng));
    if (std::isnan(f)) continue;
    const uint16_t expected = reference_float_to_half(f);
    ASSERT_EQ(f32_to_f16(f), expected) << "float bits 0x" << std::hex << std::bit_cast<uint32_t>(f);
  }
}

TEST(BFloat16, RoundToNearestEvenAndNaN) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie, even stays
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3f808001u)), 0x3f81);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::bit_cast<float>(0x7f800001u)))));  // stays NaN
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = bf16_to_f32(static_cast<uint16_t>(h));
    if (!std::isnan(f)) {
      ASSERT_EQ(f32_to_bf16(f), h);
    }
  }
}

}  // namespace
}  // namespace gptoss

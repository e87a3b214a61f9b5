// The MXFP4 quantizer (mxfp4::quantize_ggml / quantize_oai, the DType table's MXFP4 encoder):
// ggml's quantize_row_mxfp4_ref rule on hand-derived blocks, the exact round trip of values on a
// block's grid, the per-element error bound, and the midpoint shortcut against ggml's search over
// all 16 codes.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "formats/codecs/float_codec.h"
#include "formats/codecs/mxfp4.h"
#include "formats/core/dtype.h"

namespace gptoss {
namespace {

using Block = std::array<uint8_t, kMxfp4GgmlBlockBytes>;

Block quantize_block(const std::array<float, 32>& x) {
  Block b{};
  mxfp4::quantize_ggml(x.data(), 1, b.data());
  return b;
}

// ggml's rule read as a search, the way its C states it: the scale byte from floorf(log2f(amax)),
// cast as x86 casts, then per element the first code of the 16 whose level is nearest, each
// |level - x| rounded to f32. The codec takes a shortcut for finite blocks; this is what it must equal.
Block searched_block(const float* x) {
  float amax = 0.0f;
  for (int i = 0; i < 32; ++i)
    if (amax < std::fabs(x[i])) amax = std::fabs(x[i]);
  uint8_t e = 0;
  if (amax > 0.0f) {
    const float f = std::floor(std::log2(amax)) - 2.0f + 127.0f;
    e = static_cast<uint8_t>(f > -0x1p31f && f < 0x1p31f ? static_cast<int32_t>(f) : INT32_MIN);
  }
  const float d = mxfp4::ggml_half_scale_value(e);
  auto best = [&](float v) {
    int index = 0;
    float error = std::fabs(static_cast<float>(mxfp4::kGgmlKvalues[0]) * d - v);
    for (int c = 1; c < 16; ++c) {
      const float err = std::fabs(static_cast<float>(mxfp4::kGgmlKvalues[c]) * d - v);
      if (err < error) {
        index = c;
        error = err;
      }
    }
    return static_cast<uint8_t>(index);
  };
  Block b{};
  b[0] = e;
  for (int j = 0; j < 16; ++j) b[1 + j] = static_cast<uint8_t>(best(x[j]) | best(x[j + 16]) << 4);
  return b;
}

TEST(Mxfp4Quantize, KnownBlocksGiveGgmlsBytes) {
  std::array<float, 32> x{};

  // 0, 0.25, ..., 7.75: amax 7.75, floor(log2) = 2, e = 2 - 2 + 127 = 127, so the levels are
  // kvalues x 2^-1 = 0, 0.5, 1, 1.5, 2, 3, 4, 6 (codes 0..7). A value on a midpoint (0.25, 0.75,
  // 2.5, 3.5, 5) keeps the lower code; 5.25 and up take 6 (code 7), 7.75 clipped. Codes by element:
  // 0 0 1 1 2 2 3 3 4 4 4 5 5 5 5 6 | 6 6 6 6 6 7 7 7 7 7 7 7 7 7 7 7; byte j = code j | code j+16 << 4.
  for (int i = 0; i < 32; ++i) x[i] = 0.25f * static_cast<float>(i);
  EXPECT_EQ(quantize_block(x), (Block{0x7F, 0x60, 0x60, 0x61, 0x61, 0x62, 0x72, 0x73, 0x73, 0x74, 0x74, 0x74, 0x75,
                                      0x75, 0x75, 0x75, 0x76}));

  // Signs: amax 6 gives e 127 again. -0 and -0.25 (a tie with 0) are code 0, never 8 (ggml's search
  // meets code 0 first); -0.26 is -0.5 (code 9); -0.75 ties -0.5/-1 and keeps 9; -3 is code 13;
  // -6 code 15; 0.1 is 0; 5 ties 4/6 and keeps 4 (code 6). Elements 16..31 are zero.
  x.fill(0.0f);
  const float signs[8] = {-0.0f, -0.25f, -0.26f, -0.75f, -3.0f, -6.0f, 0.1f, 5.0f};
  std::memcpy(x.data(), signs, sizeof signs);
  EXPECT_EQ(quantize_block(x), (Block{0x7F, 0x00, 0x00, 0x09, 0x09, 0x0D, 0x0F, 0x00, 0x06}));

  // All zero: amax 0 gives e 0 and every code 0.
  x.fill(0.0f);
  EXPECT_EQ(quantize_block(x), Block{});

  // amax exactly a power of two: 1 = 2^0, e = 125, levels x 2^-3, so 1 is kvalue 8 (code 6) and -1
  // code 14, element 16 in the high nibble of byte 0.
  x[0] = 1.0f;
  x[16] = -1.0f;
  EXPECT_EQ(quantize_block(x), (Block{0x7D, 0xE6}));

  // A NaN never becomes amax and is code 0; amax 2 gives e 126, and 2 = kvalue 8 x 2^-2 (code 6).
  x.fill(0.0f);
  x[0] = std::numeric_limits<float>::quiet_NaN();
  x[1] = 2.0f;
  EXPECT_EQ(quantize_block(x), (Block{0x7E, 0x00, 0x06}));

  // amax 2^-130: floor(log2) - 2 + 127 = -5, which x86's cast makes the byte 251 (0xFB); with a
  // scale of 2^123 every value is nearest to 0.
  x.fill(0.0f);
  x[0] = std::ldexp(1.0f, -130);
  EXPECT_EQ(quantize_block(x), (Block{0xFB}));

  // An infinite amax casts to the integer indefinite, byte 0, so d = 2^-128; then every |level - x|
  // rounds to the same f32 (inf for the infinity, 1 for the 1), and the first code, 0, wins.
  x.fill(0.0f);
  x[0] = std::numeric_limits<float>::infinity();
  x[1] = 1.0f;
  EXPECT_EQ(quantize_block(x), Block{});
}

// Values on a block's grid come back exactly, in both layouts: E2M1 values times 2^k with the
// block's largest magnitude 6 x 2^k (every code), or 4 x 2^k (the sixes replaced by fours); either
// way floor(log2 amax) = k + 2, so the quantizer's levels are the E2M1 values times 2^k.
TEST(Mxfp4Quantize, ValuesOnTheGridRoundTripExactly) {
  for (const float top : {6.0f, 4.0f})
    for (int k = -20; k <= 20; k += 5) {
      std::array<float, 32> x{};
      for (int i = 0; i < 32; ++i) {
        const float v = mxfp4::kFp4Values[(i * 7) % 16];
        x[i] = std::ldexp(std::fabs(v) == 6.0f ? std::copysign(top, v) : v, k);
      }
      float back[32];
      const Block b = quantize_block(x);
      mxfp4::dequantize_ggml(b.data(), 1, back);
      for (int i = 0; i < 32; ++i) EXPECT_EQ(back[i], x[i]) << "top " << top << ", k " << k << ", element " << i;
      uint8_t oai[16], scale = 0;
      mxfp4::quantize_oai(x.data(), 1, oai, &scale);
      mxfp4::dequantize_oai(oai, &scale, 1, back);
      for (int i = 0; i < 32; ++i) EXPECT_EQ(back[i], x[i]) << "OpenAI layout, top " << top << ", k " << k << ", element " << i;
    }
}

// Deterministic values over many scales: full-mantissa values, ties on every midpoint, values
// beyond the top level, zeros and signed zeros.
std::vector<float> test_values() {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> v;
  for (int e = -30; e <= 30; e += 3)
    for (int i = 0; i < 32 * 64; ++i) v.push_back(std::ldexp(uniform(rng), e) * (i % 97 == 0 ? 16.0f : 1.0f));
  for (int block = 0; block < 64; ++block)  // midpoints 0.25 .. 5 of a block with amax 6 (d 0.5), both signs
    for (int i = 0; i < 32; ++i) v.push_back(i == 0 ? 6.0f : (i % 2 ? -1.0f : 1.0f) * 0.25f * static_cast<float>((i + block) % 21));
  for (int i = 0; i < 32; ++i) v.push_back(i % 2 ? -0.0f : 0.0f);
  return v;
}

// Every element is within half the grid step at its magnitude, or, above the top level 12d, clipped
// to it: with d = 2^(e - 128) from the block's own scale byte, |error| <= d/2 up to 4d, d up to 8d,
// 2d up to 12d, and exactly |x| - 12d above.
TEST(Mxfp4Quantize, ErrorStaysWithinHalfAStepOfTheBlocksGrid) {
  const auto values = test_values();
  std::vector<uint8_t> bytes(*dtype_byte_size(DType::MXFP4, values.size()));
  encode_from_f32(DType::MXFP4, values.data(), values.size(), bytes.data());  // through the DType table
  std::vector<float> back(values.size());
  decode_to_f32(DType::MXFP4, bytes.data(), values.size(), back.data());
  double worst = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    const double d = std::ldexp(1.0, bytes[(i / 32) * kMxfp4GgmlBlockBytes] - 128);
    const double x = std::fabs(static_cast<double>(values[i]));
    const double error = std::fabs(static_cast<double>(back[i]) - values[i]);
    if (x > 12 * d) {
      ASSERT_EQ(error, x - 12 * d) << "element " << i << " (" << values[i] << ")";
      continue;
    }
    const double bound = x <= 4 * d ? d / 2 : x <= 8 * d ? d : 2 * d;
    ASSERT_LE(error, bound) << "element " << i << " (" << values[i] << ")";
    worst = std::max(worst, error / d);
  }
  EXPECT_EQ(worst, 2.0);  // the step of 4d between levels 8d and 12d, at its midpoint
}

// The codec's midpoint comparisons give ggml's search's codes, block for block, and the OpenAI
// layout holds the same codes and scale bytes as ggml's (the lossless repack).
TEST(Mxfp4Quantize, MidpointsGiveTheCodesOfGgmlsSearch) {
  auto values = test_values();
  const float specials[] = {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(), std::ldexp(1.0f, -149), std::ldexp(1.0f, -126),
                            std::ldexp(1.0f, -125), std::nextafter(8.0f, 0.0f), std::numeric_limits<float>::max()};
  for (float s : specials)  // each in a block of ordinary values
    for (int i = 0; i < 32; ++i) values.push_back(i == 3 ? s : 0.37f * static_cast<float>(i - 16));
  for (int e = -150; e <= -120; ++e)  // whole blocks around and below 2^-125, where the scale byte wraps
    for (int i = 0; i < 32; ++i) values.push_back(std::ldexp(static_cast<float>(i - 16), e));
  const size_t blocks = values.size() / 32;
  std::vector<uint8_t> ggml(blocks * kMxfp4GgmlBlockBytes), oai(blocks * kMxfp4OaiBlockBytes), scales(blocks);
  mxfp4::quantize_ggml(values.data(), blocks, ggml.data());
  mxfp4::quantize_oai(values.data(), blocks, oai.data(), scales.data());
  std::vector<uint8_t> repacked(blocks * kMxfp4GgmlBlockBytes), only_scales(blocks);
  mxfp4::oai_blocks_to_ggml(oai.data(), scales.data(), blocks, repacked.data());
  mxfp4::shared_exponents(values.data(), blocks, only_scales.data());
  for (size_t b = 0; b < blocks; ++b) {
    const Block want = searched_block(values.data() + 32 * b);
    Block got;
    std::memcpy(got.data(), ggml.data() + b * kMxfp4GgmlBlockBytes, got.size());
    ASSERT_EQ(got, want) << "block " << b;
    ASSERT_EQ(std::memcmp(repacked.data() + b * kMxfp4GgmlBlockBytes, want.data(), want.size()), 0) << "block " << b;
    ASSERT_EQ(only_scales[b], want[0]) << "block " << b;
  }
}

}  // namespace
}  // namespace gptoss

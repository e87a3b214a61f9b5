// MXFP4 nibble order and scale bias, and Q8_0 against ggml's reference quantizer.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "formats/codecs/float_codec.h"
#include "formats/codecs/mxfp4.h"
#include "formats/codecs/q8_0.h"
#include "formats/core/float16.h"
#include "formats/core/mapped_file.h"

namespace gptoss {
namespace {

TEST(Mxfp4, OpenAiLowNibbleIsEvenElement) {
  // The spec's worked example: byte 0x2A, scale 126 -> element 0 = -0.5, element 1 = +0.5.
  uint8_t block[16] = {0x2A};
  uint8_t scale = 126;
  float out[32];
  mxfp4::dequantize_oai(block, &scale, 1, out);
  EXPECT_EQ(out[0], -0.5f);
  EXPECT_EQ(out[1], 0.5f);
  for (int i = 2; i < 32; ++i) EXPECT_EQ(out[i], 0.0f);
}

TEST(Mxfp4, GgmlByteJHoldsElementsJAndJPlus16) {
  uint8_t block[17] = {127, 0x71};  // scale 1.0; byte 0: low nibble 1 (+0.5), high nibble 7 (+6)
  float out[32];
  mxfp4::dequantize_ggml(block, 1, out);
  EXPECT_EQ(out[0], 0.5f);
  EXPECT_EQ(out[16], 6.0f);
  EXPECT_EQ(out[1], 0.0f);
}

TEST(Mxfp4, ScaleBiasIs127) {
  EXPECT_EQ(mxfp4::scale_value(127), 1.0f);
  EXPECT_EQ(mxfp4::scale_value(128), 2.0f);
  EXPECT_EQ(mxfp4::scale_value(0), std::ldexp(1.0f, -127));
  EXPECT_TRUE(std::isinf(mxfp4::scale_value(255)));
}

TEST(Mxfp4, RepackIsLosslessBothWays) {
  std::mt19937 rng(1);
  for (int trial = 0; trial < 1000; ++trial) {
    uint8_t oai[16], scale = static_cast<uint8_t>(rng());
    for (auto& b : oai) b = static_cast<uint8_t>(rng());
    uint8_t ggml[17], back[16], scale_back;
    mxfp4::oai_block_to_ggml(oai, scale, ggml);
    mxfp4::ggml_block_to_oai(ggml, back, &scale_back);
    ASSERT_EQ(std::memcmp(oai, back, 16), 0);
    ASSERT_EQ(scale, scale_back);
    float a[32], b[32];
    mxfp4::dequantize_oai(oai, &scale, 1, a);
    mxfp4::dequantize_ggml(ggml, 1, b);
    // The same numbers, but for scale byte 255 (NaN in the MX spec): 2^(255 - 127) overflows,
    // ggml's 2^(255 - 128) times its doubled values does not (mxfp4::kGgmlKvalues).
    for (int i = 0; i < 32; ++i)
      if (!std::isnan(a[i]) && scale != 255) {
        ASSERT_EQ(a[i], b[i]) << "element " << i;
      }
  }
}

TEST(Q8_0, MatchesGgmlReference) {
  float x[32];
  for (int i = 0; i < 32; ++i) x[i] = static_cast<float>(i - 16) * 0.25f;  // amax 4.0 at i = 0
  uint8_t block[34];
  q8_0::quantize(x, 1, block);
  const float d = 4.0f / 127.0f;
  EXPECT_EQ(load_u16(block), f32_to_f16(d));
  EXPECT_EQ(static_cast<int8_t>(block[2]), -127);
  // x * (1/d) for x = 0.25 is 7.9375: rounds to 8.
  EXPECT_EQ(static_cast<int8_t>(block[2 + 17]), static_cast<int8_t>(std::roundf(0.25f * (1.0f / d))));
}

TEST(Q8_0, RoundsHalfAwayFromZeroAndHandlesZeros) {
  float x[32] = {};
  x[0] = 127.0f;  // d = 1 exactly, id = 1
  x[1] = 2.5f;
  x[2] = -2.5f;
  x[3] = 0.5f;
  uint8_t block[34];
  q8_0::quantize(x, 1, block);
  EXPECT_EQ(static_cast<int8_t>(block[3]), 3);
  EXPECT_EQ(static_cast<int8_t>(block[4]), -3);
  EXPECT_EQ(static_cast<int8_t>(block[5]), 1);
  float zeros[32] = {};
  q8_0::quantize(zeros, 1, block);
  EXPECT_EQ(load_u16(block), 0);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(block[2 + i], 0);
  float back[32];
  q8_0::dequantize(block, 1, back);
  for (float v : back) EXPECT_EQ(v, 0.0f);
}

TEST(FloatCodec, Bf16AndF16RoundTripThroughF32) {
  const float values[4] = {1.0f, -2.5f, 0.15625f, 384.0f};  // exact in bf16 and f16
  float back[4];
  for (DType t : {DType::BF16, DType::F16, DType::F32}) {
    uint8_t buf[16];
    encode_from_f32(t, values, 4, buf);
    decode_to_f32(t, buf, 4, back);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(back[i], values[i]) << dtype_name(t);
  }
}

}  // namespace
}  // namespace gptoss

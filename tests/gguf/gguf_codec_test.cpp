// MXFP4 in both layouts, the Q8_0 quantizer's edge cases, and the streaming transforms the GGUF
// conversion is built from.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>

#include "convert/gguf/gguf_sources.h"
#include "formats/codecs/mxfp4.h"
#include "formats/codecs/q8_0.h"
#include "formats/core/float16.h"
#include "tests/test_support.h"

namespace gptoss::test {
namespace {

// ggml's own definition: kvalues_mxfp4 (E2M1 doubled) times 2^(e - 128).
constexpr int8_t kGgmlKvalues[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
static_assert(std::equal(std::begin(kGgmlKvalues), std::end(kGgmlKvalues), mxfp4::kGgmlKvalues.begin()));

TEST(Mxfp4Layouts, EveryCodeAndScaleDequantizesTheSameFromBothLayouts) {
  for (int scale = 0; scale < 256; ++scale)
    for (int code = 0; code < 16; ++code) {
      // Element j of the block holds code (code + j) % 16, so every nibble position is exercised.
      uint8_t oai[16];
      for (unsigned j = 0; j < 16; ++j)
        oai[j] = static_cast<uint8_t>(((code + 2 * j) % 16) | (((code + 2 * j + 1) % 16) << 4));
      uint8_t ggml[17];
      mxfp4::oai_block_to_ggml(oai, static_cast<uint8_t>(scale), ggml);
      EXPECT_EQ(ggml[0], scale);  // the scale byte is the same byte in both layouts
      float from_oai[32], from_ggml[32];
      const uint8_t s = static_cast<uint8_t>(scale);
      mxfp4::dequantize_oai(oai, &s, 1, from_oai);
      mxfp4::dequantize_ggml(ggml, 1, from_ggml);
      for (unsigned j = 0; j < 32; ++j) {
        const int c = (code + static_cast<int>(j)) % 16;
        const float ggml_value = static_cast<float>(kGgmlKvalues[c]) * std::ldexp(1.0f, scale - 128);
        const float oai_value = mxfp4::kFp4Values[c] * std::ldexp(1.0f, scale - 127);
        // Each layout decodes bit for bit as its reference does: ggml's arithmetic for the ggml
        // layout, PyTorch's for the OpenAI one.
        ASSERT_EQ(std::bit_cast<uint32_t>(from_ggml[j]), std::bit_cast<uint32_t>(ggml_value)) << "scale " << scale << " code " << c;
        ASSERT_EQ(std::bit_cast<uint32_t>(from_oai[j]), std::bit_cast<uint32_t>(oai_value)) << "scale " << scale << " code " << c;
        // The same numbers (-0 == +0) but for scale byte 255 (NaN in the MX spec), where
        // 2^(255 - 127) overflows and ggml's 2^(255 - 128) does not.
        if (scale < 255) {
          ASSERT_EQ(from_oai[j], from_ggml[j]) << "scale " << scale << " code " << c << " element " << j;
        }
      }
      // And the repack is lossless.
      uint8_t back[16], back_scale = 0;
      mxfp4::ggml_block_to_oai(ggml, back, &back_scale);
      ASSERT_EQ(std::memcmp(back, oai, 16), 0);
      ASSERT_EQ(back_scale, scale);
    }
}

TEST(Mxfp4Layouts, GgmlByteHoldsElementsJAndJPlus16) {
  uint8_t oai[16];
  for (unsigned j = 0; j < 16; ++j) oai[j] = static_cast<uint8_t>((2 * j) % 16 | (((2 * j + 1) % 16) << 4));
  uint8_t ggml[17];
  mxfp4::oai_block_to_ggml(oai, 127, ggml);
  for (unsigned j = 0; j < 16; ++j) {
    EXPECT_EQ(ggml[1 + j] & 0x0f, j % 16);          // element j
    EXPECT_EQ(ggml[1 + j] >> 4, (j + 16) % 16);     // element j + 16
  }
}

// Q8_0 straight from ggml's quantize_row_q8_0_ref, to check our codec against.
void reference_q8_0(const float* x, uint8_t* out) {
  float amax = 0;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  store_u16(out, f32_to_f16(d));
  for (int j = 0; j < 32; ++j) out[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::roundf(x[j] * id)));
}

TEST(Q8_0Quantizer, RoundsHalfAwayFromZero) {
  float x[32] = {};
  x[0] = 127.0f;  // amax 127: d = 1 exactly, so q = round(x)
  x[1] = 0.5f;
  x[2] = -0.5f;
  x[3] = 2.5f;
  x[4] = -2.5f;
  x[5] = 1.5f;
  x[6] = 0.49999997f;
  uint8_t q[34];
  q8_0::quantize(x, 1, q);
  EXPECT_EQ(load_u16(q), 0x3c00);  // f16 1.0
  EXPECT_EQ(static_cast<int8_t>(q[2 + 0]), 127);
  EXPECT_EQ(static_cast<int8_t>(q[2 + 1]), 1);   // not 0 (round-half-even would give 0)
  EXPECT_EQ(static_cast<int8_t>(q[2 + 2]), -1);
  EXPECT_EQ(static_cast<int8_t>(q[2 + 3]), 3);   // not 2
  EXPECT_EQ(static_cast<int8_t>(q[2 + 4]), -3);
  EXPECT_EQ(static_cast<int8_t>(q[2 + 5]), 2);
  EXPECT_EQ(static_cast<int8_t>(q[2 + 6]), 0);
}

TEST(Q8_0Quantizer, AllZeroBlockIsAllZeroBytes) {
  float x[32] = {};
  uint8_t q[34];
  std::memset(q, 0xAB, sizeof q);
  q8_0::quantize(x, 1, q);
  for (uint8_t b : q) EXPECT_EQ(b, 0);
  float back[32];
  q8_0::dequantize(q, 1, back);
  for (float v : back) EXPECT_EQ(v, 0.0f);
}

TEST(Q8_0Quantizer, ScaleIsAmaxOver127InF32AndNegativeAmaxGivesMinus127) {
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = 0.01f * static_cast<float>(j) - 0.1f;
  x[17] = -0.7f;  // largest magnitude is negative
  uint8_t q[34];
  q8_0::quantize(x, 1, q);
  EXPECT_EQ(load_u16(q), f32_to_f16(0.7f / 127.0f));
  EXPECT_EQ(static_cast<int8_t>(q[2 + 17]), -127);
  // The multiplier is 1/d of the f32 d, not of the f16-rounded one: the reference agrees byte for byte.
  uint8_t ref[34];
  reference_q8_0(x, ref);
  EXPECT_EQ(std::memcmp(q, ref, 34), 0);
}

TEST(Q8_0Quantizer, MatchesGgmlReferenceOnRandomBlocks) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  for (int block = 0; block < 2000; ++block) {
    float x[32];
    for (float& v : x) v = normal(rng) * (block % 7 == 0 ? 1000.0f : 1.0f);
    uint8_t ours[34], ref[34];
    q8_0::quantize(x, 1, ours);
    reference_q8_0(x, ref);
    ASSERT_EQ(std::memcmp(ours, ref, 34), 0) << "block " << block;
  }
}

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> out(n);
  for (auto& b : out) b = static_cast<uint8_t>(rng());
  return out;
}

// Reads a source in odd-sized pieces, so chunk boundaries fall inside rows.
std::vector<uint8_t> read_in_pieces(const TensorSource& s, size_t piece) {
  std::vector<uint8_t> out(s.size());
  for (size_t off = 0; off < out.size(); off += piece)
    s.read(off, std::span<uint8_t>(out.data() + off, std::min(piece, out.size() - off)));
  return out;
}

TEST(GgufSources, GateUpSplitAndInterleaveAreInverse) {
  // mlp1 of 3 experts, 2*5 rows, 2 blocks per row.
  const uint64_t E = 3, rows = 10, bpr = 2;
  auto blocks = std::make_shared<OwnedSource>(random_bytes(E * rows * bpr * 16, 1));
  auto scales = std::make_shared<OwnedSource>(random_bytes(E * rows * bpr, 2));
  auto gate = make_ggml_mxfp4_rows(blocks, scales, bpr, 2, 0);
  auto up = make_ggml_mxfp4_rows(blocks, scales, bpr, 2, 1);
  ASSERT_EQ(gate->size(), E * rows / 2 * bpr * 17);
  // Gate row r is canonical row 2r, repacked.
  const auto gate_bytes = read_in_pieces(*gate, 13);
  const auto canonical_blocks = read_all(*blocks), canonical_scales = read_all(*scales);
  for (uint64_t r = 0; r < E * rows / 2; ++r)
    for (uint64_t b = 0; b < bpr; ++b) {
      uint8_t expected[17];
      const uint64_t c = 2 * r;
      mxfp4::oai_block_to_ggml(&canonical_blocks[(c * bpr + b) * 16], canonical_scales[c * bpr + b], expected);
      ASSERT_EQ(std::memcmp(&gate_bytes[(r * bpr + b) * 17], expected, 17), 0);
    }
  auto blocks_back = make_interleaved_units(make_oai_blocks_from_ggml(gate, bpr), make_oai_blocks_from_ggml(up, bpr), bpr * 16);
  auto scales_back = make_interleaved_units(make_oai_scales_from_ggml(gate, bpr), make_oai_scales_from_ggml(up, bpr), bpr);
  EXPECT_EQ(read_in_pieces(*blocks_back, 7), canonical_blocks);
  EXPECT_EQ(read_in_pieces(*scales_back, 5), canonical_scales);
}

TEST(GgufSources, BiasEvenOddElements) {
  std::vector<uint8_t> bias(4 * 12);
  for (uint32_t i = 0; i < 12; ++i) store_u32(&bias[4 * i], i);
  auto src = std::make_shared<OwnedSource>(bias);
  const auto even = read_in_pieces(*make_strided_units(src, 4, 2, 0), 3);
  const auto odd = read_in_pieces(*make_strided_units(src, 4, 2, 1), 5);
  for (uint32_t i = 0; i < 6; ++i) {
    EXPECT_EQ(load_u32(&even[4 * i]), 2 * i);
    EXPECT_EQ(load_u32(&odd[4 * i]), 2 * i + 1);
  }
  auto back = make_interleaved_units(std::make_shared<OwnedSource>(even), std::make_shared<OwnedSource>(odd), 4);
  EXPECT_EQ(read_in_pieces(*back, 9), bias);
}

}  // namespace
}  // namespace gptoss::test

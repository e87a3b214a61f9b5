// --same on in-memory models: "lossy as declared" only within the rounding the encodings allow,
// NaN is different, vocabulary rows beyond the kept ones, config and tokenizer differences.
#include <gtest/gtest.h>

#include <cstring>

#include "formats/codecs/float_codec.h"
#include "formats/core/float16.h"
#include "formats/core/mapped_file.h"
#include "tests/verify/verify_test_support.h"
#include "verify/declared_loss.h"
#include "verify/equivalence.h"

namespace gptoss {
namespace {

const std::string kName = "layers.2.attn_q.weight";

std::vector<float> values_of(const CanonicalModel& model, const std::string& name) {
  const auto* t = model.find(name);
  const auto raw = test::tensor_bytes(model, name);
  std::vector<float> v(raw.size() / 2);
  decode_to_f32(t->dtype, raw.data(), v.size(), v.data());
  return v;
}

std::vector<uint8_t> encode(DType dtype, const std::vector<float>& v) {
  std::vector<uint8_t> out(*dtype_byte_size(dtype, v.size()));
  encode_from_f32(dtype, v.data(), v.size(), out.data());
  return out;
}

// Compares `a` with `b` on threads=2 and returns the verdict of kName.
TensorComparison compare_one(const CanonicalModel& a, const CanonicalModel& b, const std::string& name = kName) {
  const auto cmp = compare_models(a, b, 2);
  const auto* t = test::find_comparison(cmp, name);
  EXPECT_NE(t, nullptr);
  for (const auto& other : cmp.tensors)
    if (other.name != name) {
      EXPECT_EQ(other.verdict, Verdict::Identical) << other.name;
    }
  return t ? *t : TensorComparison{};
}

TEST(VerifySame, Q8_0WithinHalfAStepIsLossyAndOneCorruptedBlockIsDifferent) {
  const auto& hf = test::preset_a_model();
  auto q = encode(DType::Q8_0, values_of(hf, kName));
  const auto lossy = compare_one(hf, test::with_tensor_bytes(hf, kName, q, DType::Q8_0));
  EXPECT_EQ(lossy.verdict, Verdict::LossyAsDeclared) << lossy.detail;
  EXPECT_GT(lossy.max_abs_error, 0);

  // Block 40: one quant moved by 3 steps, far more than the half step rounding allows.
  uint8_t* block = q.data() + 40 * kQ8_0BlockBytes;
  block[2 + 5] = static_cast<uint8_t>(static_cast<int8_t>(block[2 + 5]) + 3);
  const auto corrupt = compare_one(hf, test::with_tensor_bytes(hf, kName, q, DType::Q8_0));
  EXPECT_EQ(corrupt.verdict, Verdict::Different);
  EXPECT_NE(corrupt.detail.find("1 values differ by more than BF16 vs Q8_0 rounding allows; first at element 1285"),
            std::string::npos) << corrupt.detail;
}

// MXFP4's allowance at its edges: a block of amax 6 (levels 0, 0.5, 1, 1.5, 2, 3, 4, 6: d = 0.5),
// quantized by ggml's rule. 5 (a tie of 4 and 6) keeps 4, an error of 2d, what the gap of 4d above
// 8d allows; 2.5 (a tie of 2 and 3) keeps 2, an error of d, what the grid of 2d allows below 8d;
// 5.5 goes to 6. Moving 5's level down to 3 (an error of 4d) is beyond it.
TEST(VerifySame, Mxfp4IsLossyWithinHalfTheGapBetweenLevelsAndDifferentBeyond) {
  std::vector<float> x(32, 0.0f);
  x[0] = 6.0f;
  x[1] = 5.0f;
  x[2] = 2.5f;
  x[3] = -5.5f;
  auto tensor = [](DType dtype, std::vector<uint8_t> bytes) {
    return CanonicalTensor{{TensorRole::Mlp1Blocks, 0, "layers.0.mlp1.blocks", {1, 32}}, dtype, owned_bytes(std::move(bytes)), "test"};
  };
  const CanonicalTensor source = tensor(DType::F32, encode(DType::F32, x));
  auto q = encode(DType::MXFP4, x);
  ASSERT_EQ(q[0], 127);  // e = floor(log2 6) - 2 + 127
  ASSERT_EQ(q[1 + 1] & 0x0F, 6);  // 5 -> 4, code 6
  const auto within = measure_declared_loss(source, tensor(DType::MXFP4, q), 1);
  EXPECT_EQ(within.beyond, 0u);
  EXPECT_EQ(within.max_abs_error, 1.0);
  q[1 + 1] = static_cast<uint8_t>((q[1 + 1] & 0xF0) | 5);  // 5 -> 3
  const auto beyond = measure_declared_loss(source, tensor(DType::MXFP4, q), 1);
  EXPECT_EQ(beyond.beyond, 1u);
  EXPECT_EQ(beyond.first_beyond, 1u);
  EXPECT_EQ(beyond.first_beyond_allowance, 1.0);
}

TEST(VerifySame, NaNIsDifferentEvenInALossyEncoding) {
  const auto& hf = test::preset_a_model();
  auto q = encode(DType::Q8_0, values_of(hf, kName));
  store_u16(q.data() + 7 * kQ8_0BlockBytes, 0x7e00);  // block 7's scale: 32 NaN values
  const auto t = compare_one(hf, test::with_tensor_bytes(hf, kName, q, DType::Q8_0));
  EXPECT_EQ(t.verdict, Verdict::Different);
  EXPECT_EQ(t.detail, "32 NaN values");
}

TEST(VerifySame, F16IsLossyWithinHalfAnUlpOfF32AndDifferentBeyond) {
  // An F32 reference with values f16 cannot hold exactly, and the same values rounded to F16.
  const auto& hf = test::preset_a_model();
  auto v = values_of(hf, kName);
  for (size_t i = 0; i < v.size(); ++i) v[i] *= 1.0f + 1e-4f * static_cast<float>(i % 7);
  const auto f32 = test::with_tensor_bytes(hf, kName, encode(DType::F32, v), DType::F32);
  auto h = encode(DType::F16, v);
  const auto rounded = compare_one(f32, test::with_tensor_bytes(hf, kName, h, DType::F16));
  EXPECT_EQ(rounded.verdict, Verdict::LossyAsDeclared) << rounded.detail;
  // Element 100 two f16 ulps away: more than the half ulp rounding can explain.
  store_u16(h.data() + 2 * 100, static_cast<uint16_t>(load_u16(h.data() + 2 * 100) + 2));
  const auto off = compare_one(f32, test::with_tensor_bytes(hf, kName, h, DType::F16));
  EXPECT_EQ(off.verdict, Verdict::Different);
  EXPECT_NE(off.detail.find("first at element 100"), std::string::npos) << off.detail;
}

TEST(VerifySame, SameEncodingAllowsNoDifference) {
  const auto& hf = test::preset_a_model();
  auto b = test::tensor_bytes(hf, kName);
  b[2 * 33] ^= 0x01;  // lowest mantissa bit of one BF16 value
  const auto t = compare_one(hf, test::with_tensor_bytes(hf, kName, b));
  EXPECT_EQ(t.verdict, Verdict::Different);
  EXPECT_NE(t.detail.find("differ by more than nothing (same encoding); first at element 33"), std::string::npos) << t.detail;
}

// The embedding cut to model.bin's 200014 rows; `change_row` (if any) altered in one value.
CanonicalModel truncated_vocabulary(std::optional<uint64_t> change_row) {
  const auto& hf = test::preset_a_model();
  const uint64_t rows = 200014, row_bytes = 64 * 2;
  auto b = test::tensor_bytes(hf, "embedding.weight");
  b.resize(rows * row_bytes);
  if (change_row) b[*change_row * row_bytes + 6] ^= 0x40;
  auto model = test::with_tensor_bytes(hf, "embedding.weight", b);
  for (auto& t : model.tensors)
    if (t.spec.name == "embedding.weight") t.spec.shape[0] = rows;
  return model;
}

TEST(VerifySame, DroppedVocabularyRowsAreLossyOnlyWhenTheKeptRowsAreUnchanged) {
  const auto kept = compare_one(test::preset_a_model(), truncated_vocabulary(std::nullopt), "embedding.weight");
  EXPECT_EQ(kept.verdict, Verdict::LossyAsDeclared);
  EXPECT_EQ(kept.detail, "vocabulary rows 201088 vs 200014, the first 200014 compared");
  const auto changed = compare_one(test::preset_a_model(), truncated_vocabulary(199000), "embedding.weight");
  EXPECT_EQ(changed.verdict, Verdict::Different);
  EXPECT_NE(changed.detail.find("first at element " + std::to_string(199000 * 64 + 3)), std::string::npos) << changed.detail;
}

TEST(VerifySame, ConfigAndTokenizerDifferencesMakeTheModelsDifferent) {
  const auto& hf = test::preset_a_model();
  CanonicalModel a = hf, b = hf;
  b.config.sliding_window = 256;
  b.config.rope_theta = 10000;
  auto tokens_a = std::make_shared<TokenizerData>();
  tokens_a->tokens = {"a", "b", "c", "<|end|>"};
  tokens_a->types = {TokenType::Normal, TokenType::Normal, TokenType::Normal, TokenType::Control};
  auto tokens_b = std::make_shared<TokenizerData>(*tokens_a);
  tokens_b->tokens[1] = "x";
  tokens_b->tokens[2] = "y";
  a.tokenizer = tokens_a;
  b.tokenizer = tokens_b;
  const auto cmp = compare_models(a, b, 2);
  EXPECT_EQ(cmp.config_differences,
            (std::vector<std::string>{"sliding_window: " + std::to_string(hf.config.sliding_window) + " vs 256",
                                      "rope_theta: 150000 vs 10000"}));
  EXPECT_EQ(cmp.tokenizer_differences, std::vector<std::string>{"2 tokens differ (first: id 1)"});
  EXPECT_EQ(test::count_verdict(cmp, Verdict::Identical), hf.tensors.size());  // the weights are the same
  EXPECT_TRUE(cmp.any_different());
}

}  // namespace
}  // namespace gptoss

// gptoss-verify --values on models with crafted tensor bytes: exact counts, the abs max, MXFP4
// and Q8_0 scale findings with their thresholds, and the offsets the findings carry.
#include <gtest/gtest.h>

#include <cstring>

#include "formats/codecs/float_codec.h"
#include "formats/core/float16.h"
#include "formats/core/mapped_file.h"
#include "formats/safetensors/safetensors_file.h"
#include "tests/test_support.h"
#include "tests/verify/verify_test_support.h"
#include "verify/value_checks.h"

namespace gptoss {
namespace {
using test::find_finding;

const TensorValueStats& stats_of(const std::vector<TensorValueStats>& stats, const std::string& name) {
  for (const auto& s : stats)
    if (s.name == name) return s;
  throw std::runtime_error("no stats for " + name);
}

std::string q_proj_file() { return (test::preset_a_checkpoint() / "hf" / "model.safetensors").string(); }

TEST(VerifyValues, CountsNaNAndInfExactlyAndFindsTheAbsMax) {
  const std::string name = "layers.0.attn_q.weight";
  auto bytes = test::tensor_bytes(test::preset_a_model(), name);
  store_u16(bytes.data() + 2 * 5, 0x7f80);   // +Inf
  store_u16(bytes.data() + 2 * 9, 0xff80);   // -Inf
  store_u16(bytes.data() + 2 * 11, 0x7fc0);  // NaN
  store_u16(bytes.data() + 2 * 13, 0xffc1);  // NaN with a payload
  store_u16(bytes.data() + 2 * 20, 0x4789);  // 70144: beyond f16
  const auto model = test::with_tensor_bytes(test::preset_a_model(), name, bytes);
  Report report;
  const auto stats = check_values(model, (test::preset_a_checkpoint() / "hf").string(), report, 2);
  const auto& s = stats_of(stats, name);
  EXPECT_EQ(s.nan, 2u);
  EXPECT_EQ(s.first_nan, 11u);
  EXPECT_EQ(s.inf, 2u);
  EXPECT_EQ(s.first_inf, 5u);
  EXPECT_EQ(s.abs_max, 70144.0);
  EXPECT_EQ(s.abs_max_at, 20u);
  const auto* nan = find_finding(report, "nan", name);
  ASSERT_NE(nan, nullptr) << report.to_table();
  EXPECT_EQ(nan->severity, Severity::Error);
  EXPECT_EQ(nan->message, "2 NaN values (first at element 11)");
  EXPECT_EQ(nan->expected, "none");
  const auto* inf = find_finding(report, "inf", name);
  ASSERT_NE(inf, nullptr);
  EXPECT_EQ(inf->message, "2 infinite values (first at element 5)");
  const auto* range = find_finding(report, "range", name);
  ASSERT_NE(range, nullptr);
  EXPECT_NE(range->message.find("abs max 70144"), std::string::npos) << range->message;
  EXPECT_EQ(range->expected, "<= 65504");
  // The bytes no longer come from the file, so the finding points at the stored tensor's start.
  const auto st = SafetensorsFile::open(q_proj_file());
  ASSERT_TRUE(nan->offset.has_value());
  EXPECT_EQ(*nan->offset, st.data_offset() + st.find("model.layers.0.self_attn.q_proj.weight")->begin);
  EXPECT_EQ(nan->file, q_proj_file());
  EXPECT_EQ(report.count(Severity::Error), 2u) << report.to_table();
}

TEST(VerifyValues, AllZeroTensorIsAWarningSayingWhatWasExpected) {
  const std::string name = "layers.1.attn_sinks";
  const auto size = test::tensor_bytes(test::preset_a_model(), name).size();
  const auto model = test::with_tensor_bytes(test::preset_a_model(), name, std::vector<uint8_t>(size, 0));
  Report report;
  const auto stats = check_values(model, "in-memory", report, 2);
  EXPECT_EQ(stats_of(stats, name).zeros, 16u);
  const auto* f = find_finding(report, "zeros", name);
  ASSERT_NE(f, nullptr) << report.to_table();
  EXPECT_EQ(f->severity, Severity::Warning);
  EXPECT_EQ(f->message, "every one of 16 values is zero");
  EXPECT_NE(f->expected.find("at least one non-zero value"), std::string::npos);
  EXPECT_EQ(report.count(Severity::Warning), 1u) << report.to_table();
}

TEST(VerifyValues, Mxfp4ScaleBytesBeyondModelBinAndImplausiblySmallAreWarnings) {
  auto high = test::tensor_bytes(test::preset_a_model(), "layers.0.mlp1.scales");
  high[3] = 245;
  auto low = test::tensor_bytes(test::preset_a_model(), "layers.1.mlp2.scales");
  low[7] = 80;
  auto model = test::with_tensor_bytes(test::preset_a_model(), "layers.0.mlp1.scales", high);
  model = test::with_tensor_bytes(model, "layers.1.mlp2.scales", low);
  Report report;
  const auto stats = check_values(model, "in-memory", report, 2);
  EXPECT_EQ(stats_of(stats, "layers.0.mlp1.scales").scale_max, 245);
  EXPECT_EQ(stats_of(stats, "layers.0.mlp1.scales").scale_max_at, 3u);
  EXPECT_EQ(stats_of(stats, "layers.1.mlp2.scales").scale_min, 80);
  const auto* wrap = find_finding(report, "mxfp4-scale", "layers.0.mlp1.scales");
  ASSERT_NE(wrap, nullptr) << report.to_table();
  EXPECT_EQ(wrap->severity, Severity::Warning);
  EXPECT_EQ(wrap->message, "scale byte 245 cannot be stored in model.bin (+14 would wrap) (first at element 3)");
  EXPECT_EQ(wrap->expected, "< 242");
  const auto* small = find_finding(report, "mxfp4-scale", "layers.1.mlp2.scales");
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(small->severity, Severity::Warning);
  EXPECT_NE(small->message.find("scale byte 80 gives weights below 2^-37"), std::string::npos) << small->message;
  EXPECT_EQ(small->expected, ">= 90");
  EXPECT_EQ(report.count(Severity::Warning), 2u) << report.to_table();
  EXPECT_EQ(report.count(Severity::Error), 0u);
}

// layers.2.attn_q.weight quantized to Q8_0 the way ggml does it.
std::vector<uint8_t> q8_0_of(const std::string& name) {
  const auto* t = test::preset_a_model().find(name);
  const auto raw = test::tensor_bytes(test::preset_a_model(), name);
  std::vector<float> values(raw.size() / 2);
  decode_to_f32(t->dtype, raw.data(), values.size(), values.data());
  std::vector<uint8_t> out(values.size() / kQ8_0BlockElements * kQ8_0BlockBytes);
  encode_from_f32(DType::Q8_0, values.data(), values.size(), out.data());
  return out;
}

TEST(VerifyValues, CleanQ8_0TensorReportsItsScaleRangeAndNoFinding) {
  const std::string name = "layers.2.attn_q.weight";
  const auto model = test::with_tensor_bytes(test::preset_a_model(), name, q8_0_of(name), DType::Q8_0);
  Report report;
  const auto stats = check_values(model, "in-memory", report, 2);
  const auto& s = stats_of(stats, name);
  ASSERT_TRUE(s.q8_0.has_value());
  EXPECT_EQ(s.q8_0->blocks, 1024u * 64 / 32);
  EXPECT_GT(s.q8_0->min, 0);
  EXPECT_LE(s.q8_0->min, s.q8_0->max);
  EXPECT_NEAR(s.q8_0->max * 127, s.abs_max, s.abs_max * 1e-3);  // the largest block: amax / 127
  EXPECT_FALSE(s.q8_0->first_bad_block.has_value());
  EXPECT_FALSE(report.has_problems()) << report.to_table();
}

TEST(VerifyValues, Q8_0ScalesARealCheckpointNeverHasAreFlagged) {
  const std::string name = "layers.2.attn_q.weight";
  auto q = q8_0_of(name);
  auto block = [&](uint64_t b) { return q.data() + b * kQ8_0BlockBytes; };
  store_u16(block(3), 0x7e00);                                    // NaN scale
  store_u16(block(5), static_cast<uint16_t>(load_u16(block(5)) | 0x8000));  // negative scale
  store_u16(block(7), 0x0000);                                    // zero scale on non-zero quants
  block(9)[2] = 0x80;                                             // a quant of -128
  store_u16(block(11), f32_to_f16(1000.0f));                      // values up to 127000
  const auto model = test::with_tensor_bytes(test::preset_a_model(), name, q, DType::Q8_0);
  Report report;
  const auto stats = check_values(model, "in-memory", report, 2);
  const auto& s = *stats_of(stats, name).q8_0;
  EXPECT_EQ(s.non_finite, 1u);
  EXPECT_EQ(s.negative, 1u);
  EXPECT_EQ(s.zero_with_data, 1u);
  EXPECT_EQ(s.minus_128, 1u);
  EXPECT_EQ(s.max, 1000.0);
  EXPECT_EQ(s.first_max_block, 11u);
  EXPECT_EQ(s.first_bad_block, 3u);
  size_t errors = 0, warnings = 0;
  for (const auto& f : report.findings())
    if (f.check == "q8_0-scale") {
      EXPECT_EQ(f.item, name);
      (f.severity == Severity::Error ? errors : warnings)++;
    }
  EXPECT_EQ(errors, 1u) << report.to_table();    // NaN/Inf
  EXPECT_EQ(warnings, 4u) << report.to_table();  // negative, zero with data, -128, beyond f16
  const std::string table = report.to_table();
  for (const char* text : {"1 of 2048 block scales are NaN or Inf (first bad block 3)",
                           "1 block scales have the sign bit set", "1 blocks have scale 0 but non-zero quants",
                           "1 blocks hold the quant -128", "block scale 1000.000000 (block 11) decodes to values beyond the f16 range"})
    EXPECT_NE(table.find(text), std::string::npos) << text << "\n" << table;
  EXPECT_TRUE(test::has_finding(report, "nan", name));  // the NaN scale's 32 values
  EXPECT_EQ(stats_of(stats, name).nan, 32u);
}

}  // namespace
}  // namespace gptoss

// compare_config (inside compare_models) goes through for_each_config_field: every field, changed
// in turn, is reported under its name, as a difference or, for fields not every format stores, as
// a note. A member added to GptOssConfig and to the visitor is compared without touching verify.
#include <gtest/gtest.h>

#include "tests/config_fields_support.h"
#include "verify/equivalence.h"

namespace gptoss {
namespace {

CanonicalModel model_with(const GptOssConfig& config) {
  CanonicalModel m;
  m.config = config;
  return m;
}

TEST(ConfigCompare, EveryFieldChangedInTurnIsReportedByName) {
  const GptOssConfig base = test::every_field_set_config();
  const auto same = compare_models(model_with(base), model_with(base), 1);
  EXPECT_TRUE(same.config_differences.empty());
  EXPECT_TRUE(same.config_notes.empty());
  size_t reported = 0;
  test::for_each_changed_field(base, [&](const ConfigField& field, const GptOssConfig& changed) {
    const auto cmp = compare_models(model_with(base), model_with(changed), 1);
    const auto& where = field.compare == ConfigCompare::Note ? cmp.config_notes : cmp.config_differences;
    const auto& elsewhere = field.compare == ConfigCompare::Note ? cmp.config_differences : cmp.config_notes;
    // num_hidden_layers also changes layer_types (one entry per layer), so both are reported.
    const size_t expected = field.name == "num_hidden_layers" ? 2 : 1;
    ASSERT_EQ(where.size() + elsewhere.size(), expected) << field.name << "\n" << cmp.to_table();
    EXPECT_EQ(where.front().rfind(std::string(field.name) + ": ", 0), 0u) << where.front();
    EXPECT_EQ(cmp.any_different(), field.compare != ConfigCompare::Note) << field.name;
    ++reported;
  });
  EXPECT_EQ(reported, test::aggregate_member_count<GptOssConfig>());
}

TEST(ConfigCompare, MessagesSayBothValues) {
  const GptOssConfig a = test::every_field_set_config();
  GptOssConfig b = a;
  b.rope_scaling_factor = 32;
  b.yarn_truncate = false;
  b.sliding_layers = {false, false};
  b.eos_token_id.reset();
  b.vocab_size = 200;
  const auto cmp = compare_models(model_with(a), model_with(b), 1);
  EXPECT_EQ(cmp.config_differences, (std::vector<std::string>{"layer_types: layer 0 is sliding vs full",
                                                                "rope_scaling.factor: 8 vs 32",
                                                                "rope_scaling.truncate: true vs false"}));
  EXPECT_EQ(cmp.config_notes,
            (std::vector<std::string>{
                "vocab_size: 300 vs 200 (rows beyond the smaller vocabulary are compared as dropped)",
                "eos_token_id: 11 vs none (not every format stores it)"}));
}

TEST(ConfigCompare, ValuesSomeFormatsStoreAsF32AreEqualWithinItsRounding) {
  const GptOssConfig a = test::every_field_set_config();
  GptOssConfig b = a;
  b.rms_norm_eps = static_cast<float>(a.rms_norm_eps);    // how GGUF and model.bin hold it
  b.yarn_beta_fast = a.yarn_beta_fast * (1 + 1e-7);
  EXPECT_TRUE(compare_models(model_with(a), model_with(b), 1).config_differences.empty());
  b.yarn_beta_fast = a.yarn_beta_fast * (1 + 1e-5);
  EXPECT_EQ(compare_models(model_with(a), model_with(b), 1).config_differences,
            std::vector<std::string>{"rope_scaling.beta_fast: 16 vs 16.00016"});
}

}  // namespace
}  // namespace gptoss

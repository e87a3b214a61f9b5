// for_each_config_field lists every member of GptOssConfig once; both config.json writers write
// each field the visitor names and both readers read it back.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "convert/gptoss_config.h"
#include "tests/config_fields_support.h"

namespace gptoss {
namespace {

TEST(ConfigFields, TheVisitorVisitsEveryMemberOfTheConfig) {
  // Fails when a member is added to GptOssConfig and not to for_each_config_field.
  EXPECT_EQ(test::config_field_count(), test::aggregate_member_count<GptOssConfig>());
  EXPECT_EQ(test::aggregate_member_count<GptOssConfig>(), 23u);  // the counter itself counts
}

const GptOssConfig kAnyConfig;

TEST(ConfigFields, NamesAndKeysAreUnique) {
  std::set<std::string_view> hf_keys, original_keys;
  for_each_config_field(
      [&](const ConfigField& f, const auto&) {
        EXPECT_TRUE(hf_keys.insert(f.name).second) << f.name;
        if (!f.hf_alias.empty()) {
          EXPECT_TRUE(hf_keys.insert(f.hf_alias).second) << f.hf_alias;
        }
        if (!f.original_key.empty()) {
          EXPECT_TRUE(original_keys.insert(f.original_key).second) << f.original_key;
        }
        EXPECT_EQ(f.compare == ConfigCompare::Note, !f.note.empty()) << f.name;
      },
      std::as_const(kAnyConfig));
  EXPECT_EQ(hf_keys.size(), test::config_field_count() + 2);  // two aliases
}

TEST(ConfigFields, HuggingFaceConfigRoundTripsEveryFieldChangedInTurn) {
  const GptOssConfig base = test::every_field_set_config();
  ASSERT_EQ(config_from_hf_json(config_to_hf_json(base), "base"), base);
  test::for_each_changed_field(base, [](const ConfigField& field, const GptOssConfig& changed) {
    ASSERT_NE(changed, test::every_field_set_config()) << field.name;
    const auto text = config_to_hf_json(changed).dump();
    EXPECT_EQ(config_from_hf_json(nlohmann::json::parse(text), "config.json"), changed) << field.name << "\n" << text;
  });
}

TEST(ConfigFields, OriginalConfigRoundTripsEveryFieldItHasAKeyFor) {
  test::for_each_changed_field(test::every_field_set_config(), [](const ConfigField& field, const GptOssConfig& changed) {
    if (field.original_key.empty()) return;  // the original layout implies it
    const auto written = config_to_original_json(changed);
    ASSERT_TRUE(written.contains(std::string(field.original_key))) << field.name;
    const GptOssConfig back = config_from_original_json(nlohmann::json::parse(written.dump()), "original/config.json");
    bool compared = false;
    for_each_config_field(
        [&](const ConfigField& f, const auto& read, const auto& expected) {
          if (f.name != field.name) return;
          EXPECT_EQ(read, expected) << field.name;
          compared = true;
        },
        back, changed);
    EXPECT_TRUE(compared);
  });
}

TEST(ConfigFields, WritersLeaveNoTemplateKeyUnfilledAndWriteEveryKey) {
  const GptOssConfig c = test::every_field_set_config();
  const auto hf = config_to_hf_json(c);
  const auto original = config_to_original_json(c);
  for_each_config_field(
      [&](const ConfigField& f, const auto&) {
        std::string pointer = "/" + std::string(f.name);
        std::replace(pointer.begin(), pointer.end(), '.', '/');
        EXPECT_TRUE(hf.contains(nlohmann::ordered_json::json_pointer(pointer))) << f.name;
        if (!f.hf_alias.empty()) {
          EXPECT_TRUE(hf.contains(std::string(f.hf_alias))) << f.hf_alias;
        }
        if (!f.original_key.empty()) {
          EXPECT_TRUE(original.contains(std::string(f.original_key))) << f.original_key;
        }
      },
      c);
  EXPECT_EQ(hf.dump().find("null"), std::string::npos) << hf.dump();
  EXPECT_EQ(original.size(), 16u);
  GptOssConfig no_ids = c;
  no_ids.bos_token_id.reset();
  no_ids.pad_token_id.reset();
  const auto without = config_to_hf_json(no_ids);
  EXPECT_FALSE(without.contains("bos_token_id"));
  EXPECT_FALSE(without.contains("pad_token_id"));
  EXPECT_EQ(without["eos_token_id"], 11);
}

}  // namespace
}  // namespace gptoss

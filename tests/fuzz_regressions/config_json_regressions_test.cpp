// config.json inputs the fuzzer (fuzz/fuzz_config_json.cpp) stopped on.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "convert/gptoss_config.h"
#include "formats/core/error.h"
#include "fuzz/harness_support.h"
#include "tests/test_support.h"

namespace gptoss {
namespace {

// fuzz/regressions/config_json/rope-type-number: preset a's config.json with rope_scaling.rope_type
// 0. The reader called nlohmann's value<std::string>() on it, whose type_error 302 escaped without
// file or field (the harness lets only FormatError pass: libFuzzer stopped on it within 20 s).
TEST(ConfigJsonFuzzRegression, RopeTypeNumberIsAFormatErrorNamingTheField) {
  const auto bytes = test::read_file_bytes(std::string(GPTOSS_FUZZ_REGRESSIONS_DIR) + "/config_json/rope-type-number");
  const auto json = nlohmann::json::parse(bytes.begin(), bytes.end());
  try {
    (void)config_from_hf_json(json, "config.json");
    FAIL() << "accepted";
  } catch (const FormatError& e) {
    EXPECT_STREQ(e.what(), "config.json: rope_scaling.rope_type: expected a string, found the number 0");
  }
  EXPECT_EQ(gptoss_fuzz_config_json(bytes.data(), bytes.size()), 0);
}

// fuzz/regressions/config_json/original-huge-rope-factor: preset a's original config.json with
// rope_scaling_factor 1e300. The reader converted 4096 x 1e300 to uint64_t, which is undefined
// behaviour (UBSan: float-cast-overflow); found while checking the harness before the campaign.
TEST(ConfigJsonFuzzRegression, OriginalContextProductOutOfRangeIsAFormatError) {
  const auto bytes =
      test::read_file_bytes(std::string(GPTOSS_FUZZ_REGRESSIONS_DIR) + "/config_json/original-huge-rope-factor");
  auto json = nlohmann::json::parse(bytes.begin(), bytes.end());
  for (const double factor : {1e300, -2.0, 1048577.0}) {  // 4096 x 1048577 is just past 2^32
    json["rope_scaling_factor"] = factor;
    try {
      (void)config_from_original_json(json, "original/config.json");
      FAIL() << factor;
    } catch (const FormatError& e) {
      EXPECT_EQ(e.field(), "rope_scaling_factor");
      EXPECT_NE(e.message().find("is not a context length"), std::string::npos) << e.what();
    }
  }
  json["rope_scaling_factor"] = 1048576.0;  // 4096 x 2^20 = 2^32: one past the largest
  EXPECT_THROW((void)config_from_original_json(json, "original/config.json"), FormatError);
  json["rope_scaling_factor"] = 32.0;
  EXPECT_EQ(config_from_original_json(json, "original/config.json").max_position_embeddings, 131072u);
  EXPECT_EQ(gptoss_fuzz_config_json(bytes.data(), bytes.size()), 0);
}

}  // namespace
}  // namespace gptoss

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

}  // namespace
}  // namespace gptoss

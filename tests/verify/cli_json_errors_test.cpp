// gptoss-verify on a checkpoint whose config.json holds a value of the wrong JSON type (the
// fuzzer's finding: rope_scaling.rope_type a number) names the file and the field; it used to
// print only nlohmann's "[json.exception.type_error.302] type must be string, but is number".
// The weights parse, so plain verification reports it as an error finding (exit 1, like every
// other config problem); --same cannot load the model at all (exit 2).
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/test_support.h"
#include "tests/verify/verify_test_support.h"

namespace gptoss {
namespace {
namespace fs = std::filesystem;

struct BadConfigCheckpoint {
  test::TempDir dir;
  fs::path hf = dir / "hf";
  BadConfigCheckpoint() {
    const fs::path from = test::preset_a_checkpoint() / "hf";
    fs::create_directories(hf);
    fs::create_symlink(from / "model.safetensors", hf / "model.safetensors");  // the weights are fine
    auto config = nlohmann::json::parse(std::ifstream(from / "config.json"));
    config["rope_scaling"]["rope_type"] = 0;
    std::ofstream(hf / "config.json") << config.dump(2);
  }
  std::string expected() const {
    return (hf / "config.json").string() + "  rope_scaling.rope_type: expected a string, found the number 0";
  }
};

using test::verify;

TEST(VerifyCliJsonErrors, ConfigValueOfTheWrongTypeIsAnErrorFindingNamingFileAndField) {
  const BadConfigCheckpoint ck;
  const auto r = verify(ck.hf.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("error  [model]  " + ck.expected()), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("json.exception"), std::string::npos) << r.output;
  const auto json = verify("--json " + ck.hf.string());
  EXPECT_EQ(json.exit_code, 1) << json.output;
  const auto j = nlohmann::json::parse(json.output);
  ASSERT_EQ(j["errors"], 1) << json.output;
  EXPECT_EQ(j["findings"][0]["file"], (ck.hf / "config.json").string());
  EXPECT_EQ(j["findings"][0]["item"], "rope_scaling.rope_type");
  EXPECT_EQ(j["findings"][0]["message"], "expected a string, found the number 0");
}

TEST(VerifyCliJsonErrors, SameCannotLoadTheModelAndExitsTwoNamingFileAndField) {
  const BadConfigCheckpoint ck;
  const auto r = verify("--same " + ck.hf.string() + " " + (test::preset_a_checkpoint() / "hf").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("gptoss-verify: " + (ck.hf / "config.json").string() +
                          ": rope_scaling.rope_type: expected a string, found the number 0"),
            std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace gptoss

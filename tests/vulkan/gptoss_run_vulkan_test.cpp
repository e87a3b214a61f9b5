// gptoss-run --engine vulkan generates what the CPU engine generates (greedy, preset a), and
// --engines cpu,vulkan prints the stage-by-stage comparison of the two.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/test_support.h"
#include "tests/vulkan/vulkan_test_support.h"

namespace gptoss::test {
namespace {

constexpr const char* kHarmonyIds = "200006,1428,200008,4827,382,220,17,10,17,30,200007,200006,173781";

nlohmann::json run_json(const std::string& engine) {
  const auto result = run_command((tools_dir() / "gptoss-run").string() + " " +
                                  (preset_a_checkpoint() / "hf").string() + " --prompt-tokens " + kHarmonyIds +
                                  " --max-tokens 6 --json --engine " + engine + " 2>/dev/null");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  return nlohmann::json::parse(result.output.substr(result.output.find('{')));
}

TEST(GptossRunVulkan, GeneratesTheCpuEnginesGreedyTokens) {
  VULKAN_OR_SKIP();
  const auto cpu = run_json("cpu");
  const auto vulkan = run_json("vulkan");
  EXPECT_EQ(vulkan["engine"], "vulkan");
  ASSERT_EQ(vulkan["tokens"].size(), 6u);
  EXPECT_EQ(vulkan["tokens"], cpu["tokens"]);
}

TEST(GptossRunVulkan, EnginesOptionComparesCpuAndVulkan) {
  VULKAN_OR_SKIP();
  const auto result = run_command((tools_dir() / "gptoss-run").string() + " " +
                                  (preset_a_checkpoint() / "hf").string() + " --prompt-tokens " + kHarmonyIds +
                                  " --engines cpu,vulkan 2>&1");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("| stage (max abs diff vs cpu: safetensors hf) | vulkan: safetensors hf |"),
            std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find("| layer 3 |"), std::string::npos) << result.output;
}

TEST(GptossRunVulkan, RefusesAnUnknownEngine) {
  const auto result = run_command((tools_dir() / "gptoss-run").string() + " " +
                                  (preset_a_checkpoint() / "hf").string() + " --prompt-tokens 1 --engine metal 2>&1");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.output.find("metal"), std::string::npos) << result.output;
}

}  // namespace
}  // namespace gptoss::test

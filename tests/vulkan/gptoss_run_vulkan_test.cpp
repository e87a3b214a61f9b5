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

// --list-devices names every device the loader offers (lavapipe at least, in CI) with the index
// --device takes; --device picks one, and an index past the list is a clear error.
TEST(GptossRunVulkan, ListsDevicesAndPicksOneByIndex) {
  VULKAN_OR_SKIP();
  const auto tool = (tools_dir() / "gptoss-run").string();
  const auto listed = run_command("(" + tool + " --list-devices --json 2>/dev/null)");
  ASSERT_EQ(listed.exit_code, 0) << listed.output;
  const auto devices = nlohmann::json::parse(listed.output);
  ASSERT_FALSE(devices.empty());
  bool found_current = false;
  for (size_t i = 0; i < devices.size(); ++i) {
    EXPECT_EQ(devices[i]["index"], i);
    EXPECT_FALSE(devices[i]["name"].get<std::string>().empty());
    EXPECT_GT(devices[i]["max_storage_buffer_range"].get<uint64_t>(), 0u);
    const auto dot = devices[i]["integer_dot_product"].get<std::string>();
    EXPECT_TRUE(dot == "accelerated" || dot == "supported" || dot == "none") << dot;
    if (devices[i]["name"] == ctx->info().name) {
      found_current = true;
      EXPECT_EQ(dot, ctx->info().integer_dot_product_accelerated ? "accelerated"
                     : ctx->info().integer_dot_product          ? "supported"
                                                                : "none");
      EXPECT_EQ(devices[i]["float64"].get<bool>(), ctx->info().float64);
      EXPECT_EQ(devices[i]["cooperative_matrix"].get<std::string>(), vk::cooperative_matrix_forms(ctx->info()));
    }
  }
  EXPECT_TRUE(found_current) << ctx->info().name << " is missing from " << listed.output;
  const auto text = run_command(tool + " --list-devices");
  EXPECT_NE(text.output.find("0: "), std::string::npos) << text.output;
  EXPECT_NE(text.output.find(", integer dot products "), std::string::npos) << text.output;

  const std::string run = tool + " " + (preset_a_checkpoint() / "hf").string() + " --prompt-tokens " + kHarmonyIds +
                          " --max-tokens 2 --engine vulkan --device ";
  const auto picked = run_command("(" + run + std::to_string(ctx->info().index) + " --json 2>/dev/null)");
  ASSERT_EQ(picked.exit_code, 0) << picked.output;
  EXPECT_NE(nlohmann::json::parse(picked.output)["device"].get<std::string>().find(ctx->info().name), std::string::npos);
  // With --engines cpu,vulkan, --device goes to the vulkan column (the CPU engine takes none).
  const auto both = run_command(tool + " " + (preset_a_checkpoint() / "hf").string() + " --prompt-tokens " +
                                kHarmonyIds + " --engines cpu,vulkan --device " + std::to_string(ctx->info().index) +
                                " 2>&1");
  EXPECT_EQ(both.exit_code, 0) << both.output;
  EXPECT_NE(both.output.find("| layer 3 |"), std::string::npos) << both.output;
  const auto missing = run_command(run + "99");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.output.find("no device 99 (there are " + std::to_string(devices.size())), std::string::npos)
      << missing.output;
}

}  // namespace
}  // namespace gptoss::test

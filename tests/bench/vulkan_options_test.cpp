// The Vulkan engine's options as every tool reads them (tools/common/vulkan_options.h): --tuning's
// keys, the switches, their text for labels, and the refusal without a Vulkan engine.
#include "tools/common/vulkan_options.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace gptoss::test {
namespace {

using runtime::VulkanTuning;

VulkanTuning parse(std::vector<std::string> args) {
  CLI::App app;
  VulkanTuning t;
  add_vulkan_options(app, t);
  args.insert(args.begin(), "tool");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  app.parse(static_cast<int>(argv.size()), argv.data());
  return t;
}

TEST(VulkanOptions, EachKeySetsItsField) {
  VulkanTuning t;
  apply_tuning("attention_splits=8,attention_heads=1,attention_range=32,attention_key_lanes=1", t);
  apply_tuning("matvec_rows=3,matvec_loads=16,mlp1_outputs=4,mlp1_batch=2,mlp2_outputs=8,mlp2_batch=1", t);
  apply_tuning("coopmat=off,int_dot=on,profile=submits,pipeline_stats=on,gemm_precision=split,attention_coop=off", t);
  apply_tuning("dense_tile=128,expert_tile=192,coop_form=khr,scaled_q8=off,attention_precision=fast,dense_promote=16", t);
  EXPECT_EQ(t.attention_splits, 8u);
  EXPECT_EQ(t.attention_heads, 1u);
  EXPECT_EQ(t.attention_range, 32u);
  EXPECT_EQ(t.attention_key_lanes, 1u);
  EXPECT_EQ(t.matvec_rows, 3u);
  EXPECT_EQ(t.matvec_loads, 16u);
  EXPECT_EQ(t.mlp1_outputs, 4u);
  EXPECT_EQ(t.mlp1_batch, 2u);
  EXPECT_EQ(t.mlp2_outputs, 8u);
  EXPECT_EQ(t.mlp2_batch, 1u);
  EXPECT_FALSE(t.cooperative_matrix);
  EXPECT_FALSE(t.attention_coop);
  EXPECT_EQ(t.coop_form, VulkanTuning::CoopForm::Khr);
  EXPECT_FALSE(t.scaled_q8_0);
  EXPECT_EQ(t.attention_precision, VulkanTuning::AttentionPrecision::Fast);
  EXPECT_EQ(t.dense_tile, 128u);
  EXPECT_EQ(t.dense_promote, 16u);
  EXPECT_EQ(t.expert_tile, 192u);
  EXPECT_EQ(t.integer_dot, VulkanTuning::IntegerDot::On);
  EXPECT_EQ(t.profile, VulkanTuning::Profile::Submits);
  EXPECT_TRUE(t.pipeline_statistics);
  EXPECT_EQ(t.gemm_precision, VulkanTuning::GemmPrecision::Split);
  apply_tuning("gemm_precision=promoted", t);
  EXPECT_EQ(t.gemm_precision, VulkanTuning::GemmPrecision::Promoted);
  apply_tuning("gemm_precision=split", t);
  // The text of the fields that differ reads back to the same tuning.
  VulkanTuning again;
  apply_tuning(tuning_text(t), again);
  EXPECT_EQ(again, t);
  EXPECT_EQ(tuning_text(VulkanTuning{}), "");
  VulkanTuning one;
  apply_tuning("coopmat=off,attention_splits=64", one);
  EXPECT_EQ(tuning_text(one), "coopmat=off,attention_splits=64");
}

TEST(VulkanOptions, UnknownKeysAndValuesAreRefusedByName) {
  const std::pair<const char*, const char*> refused[] = {
      {"splits=8", "unknown key splits"},
      {"attention_splits", "expected KEY=VALUE"},
      {"attention_splits=x", "expected a number"},
      {"attention_splits=-1", "expected a number"},
      {"attention_splits=", "expected a number"},
      {"coopmat=no", "expected on or off"},
      {"attention_coop=2", "expected on or off"},
      {"coop_form=cuda", "expected auto, nv or khr"},
      {"int_dot=1", "expected auto, on or off"},
      {"profile=yes", "expected off, steps or submits"},
      {"gemm_precision=exact", "expected fast, split, promoted or precise"},
      {"attention_precision=split", "expected fast or precise"}};
  for (const auto& [text, why] : refused) {
    VulkanTuning t;
    try {
      apply_tuning(text, t);
      ADD_FAILURE() << text << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << text << ": " << e.what();
    }
  }
}

TEST(VulkanOptions, SwitchesOnTheCommandLine) {
  const auto t = parse({"--profile", "--pipeline-stats", "--no-coopmat", "--int-dot", "off", "--tuning", "attention_range=7"});
  EXPECT_EQ(t.profile, VulkanTuning::Profile::Steps);  // --profile alone: every step
  EXPECT_TRUE(t.pipeline_statistics);
  EXPECT_FALSE(t.cooperative_matrix);
  EXPECT_EQ(t.integer_dot, VulkanTuning::IntegerDot::Off);
  EXPECT_EQ(t.attention_range, 7u);
  EXPECT_EQ(parse({"--profile", "submits"}).profile, VulkanTuning::Profile::Submits);
  const auto fast = parse({"--fast"});
  EXPECT_EQ(fast.gemm_precision, VulkanTuning::GemmPrecision::Fast);
  EXPECT_EQ(fast.attention_precision, VulkanTuning::AttentionPrecision::Fast);
  EXPECT_EQ(tuning_text(fast), "gemm_precision=fast,attention_precision=fast");
  EXPECT_EQ(parse({}), VulkanTuning{});
  EXPECT_THROW(parse({"--tuning", "nope=1"}), CLI::ValidationError);
  EXPECT_THROW(parse({"--int-dot", "maybe"}), CLI::ValidationError);
}

TEST(VulkanOptions, RefusedWithoutAVulkanEngine) {
  for (const char* option : {"--no-coopmat", "--fast", "--prefill-chunk=1024"}) {
    CLI::App app;
    VulkanTuning t;
    uint32_t chunk = 0;
    add_vulkan_options(app, t);
    add_prefill_chunk_option(app, chunk);
    const char* argv[] = {"tool", option};
    app.parse(2, argv);
    const std::string name = std::string(option).substr(0, std::string(option).find('='));
    EXPECT_NO_THROW(refuse_vulkan_options_unless_vulkan(app, true));
    try {
      refuse_vulkan_options_unless_vulkan(app, false);
      ADD_FAILURE() << "no refusal of " << option;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(name + " sets how the Vulkan engine computes"), std::string::npos) << e.what();
    }
  }
}

// --prefill-chunk starts at EngineOptions' default, takes 1 .. 65536 and refuses 0.
TEST(VulkanOptions, PrefillChunkOnTheCommandLine) {
  CLI::App app;
  uint32_t chunk = runtime::EngineOptions{}.prefill_chunk;
  add_prefill_chunk_option(app, chunk);
  const char* none[] = {"tool"};
  app.parse(1, none);
  EXPECT_EQ(chunk, 4096u);
  const char* given[] = {"tool", "--prefill-chunk", "300"};
  app.parse(3, given);
  EXPECT_EQ(chunk, 300u);
  const char* zero[] = {"tool", "--prefill-chunk", "0"};
  EXPECT_THROW(app.parse(3, zero), CLI::ValidationError);
}

}  // namespace
}  // namespace gptoss::test

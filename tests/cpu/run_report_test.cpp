// What gptoss-run prints besides the generated text, from hand-made values: the device list and a
// generation's JSON object and stderr lines.
#include <gtest/gtest.h>

#include "tools/gptoss-run/run_report.h"

namespace gptoss::run {
namespace {

runtime::DeviceDescription lavapipe() {
  runtime::DeviceDescription d;
  d.index = 1;
  d.name = "llvmpipe";
  d.type = "cpu";
  d.driver = "Mesa 22.3";
  d.memory_bytes = uint64_t{3} << 30;
  d.subgroup_size = 8;
  d.max_storage_buffer_range = uint64_t{1} << 31;
  d.usable = false;
  d.integer_dot_product = "supported";
  d.float64 = true;
  d.cooperative_matrix = "none";
  return d;
}

TEST(GptossRunReport, DevicesAsTextAndJson) {
  EXPECT_EQ(devices_text({}), "no Vulkan device\n");
  EXPECT_EQ(devices_text({lavapipe()}),
            "1: llvmpipe (cpu; Mesa 22.3), 3.0 GiB device memory, subgroup 8, storage-buffer range 2.0 GiB, integer dot "
            "products supported, router sums in f64, cooperative matrices none (no compute queue: unusable)\n");
  auto f32_only = lavapipe();
  f32_only.float64 = false;
  EXPECT_NE(devices_text({f32_only}).find("router sums in f32"), std::string::npos);
  EXPECT_EQ(devices_json({lavapipe()}).dump(),
            R"j([{"index":1,"name":"llvmpipe","type":"cpu","driver":"Mesa 22.3","memory_bytes":3221225472,)j"
            R"j("subgroup_size":8,"max_storage_buffer_range":2147483648,"usable":false,"integer_dot_product":"supported",)j"
            R"j("float64":true,"cooperative_matrix":"none"}])j");
}

GenerationReport hand_made() {
  GenerationReport r;
  r.engine = "cpu";
  r.device = "CPU (f32)";
  r.vocab_size = 201088;
  r.prompt = {1, 2, 3, 4};
  r.result.tokens = {7, 8};
  r.result.stop = sampling::StopReason::MaxTokens;
  r.result.prompt_seconds = 0.5;
  r.result.generation_seconds = 0.25;
  return r;
}

TEST(GptossRunReport, GenerationJsonHasWhatTheRunHad) {
  auto r = hand_made();
  EXPECT_EQ(generation_json(r).dump(),
            R"j({"engine":"cpu","device":"CPU (f32)","vocab_size":201088,"prompt_tokens":[1,2,3,4],"tokens":[7,8],)j"
            R"j("stop_reason":"max_tokens","prompt_seconds":0.5,"generation_seconds":0.25,"prompt_tokens_per_second":8.0,)j"
            R"j("generation_tokens_per_second":8.0})j");
  r.text = "hi";
  r.harmony = GenerationReport::Harmony{"4", "two plus two", {"stray token"}};
  r.dump_logits = "l.f32";
  r.trace = "t.trace";
  const auto j = generation_json(r);
  EXPECT_EQ(j["text"], "hi");
  EXPECT_EQ(j["final"], "4");
  EXPECT_EQ(j["analysis"], "two plus two");
  EXPECT_EQ(j["harmony_problems"], nlohmann::ordered_json::array({"stray token"}));
  EXPECT_EQ(j["dump_logits"], "l.f32");
  EXPECT_EQ(j["trace"], "t.trace");
}

TEST(GptossRunReport, SummaryLines) {
  auto r = hand_made();
  EXPECT_EQ(generation_summary(r), "prompt: 4 tokens, 8.0 tokens/s; generation: 2 tokens, 8.0 tokens/s (stop: max_tokens)\n");
  r.result.tokens.clear();
  r.result.stop = sampling::StopReason::StopToken;
  r.harmony = GenerationReport::Harmony{"", "", {"stray token", "another"}};
  r.dump_logits = "l.f32";
  r.trace = "t.trace";
  EXPECT_EQ(generation_summary(r),
            "harmony: 2 problems parsing the output (e.g. stray token); --raw shows every token\n"
            "prompt: 4 tokens, 8.0 tokens/s; generation: 0 tokens, 0.0 tokens/s (stop: stop_token)\n"
            "wrote 4 x 201088 logits to l.f32\n"
            "wrote the trace of the prompt's forward pass to t.trace\n");
}

}  // namespace
}  // namespace gptoss::run

// KernelProfiler (VulkanTuning::profile): per step, each labelled step of a command buffer gets its
// own time; per submit, the command buffer as a whole gets one.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/vulkan/kernel_profiler.h"
#include "runtime/vulkan/kernels.h"
#include "runtime/vulkan/vulkan_engine.h"
#include "convert/model_io.h"
#include "tests/test_support.h"
#include "tests/vulkan/vulkan_test_support.h"

namespace gptoss::test {
namespace {

using Scope = vk::KernelProfiler::Scope;

// The "total ms" of the report's row `label` (its count must be `count`), or -1 without that row.
double total_ms(const std::string& report, const std::string& label, int count) {
  const std::string row = "| " + label + " | " + (count ? std::to_string(count) + " " : std::string()) + "| ";
  const size_t at = report.find(row);
  return at == std::string::npos ? -1.0 : std::strtod(report.c_str() + at + row.size(), nullptr);
}

TEST(VulkanProfiler, StepsTimeEachLabelledStepAndSubmitsTheWholeCommandBuffer) {
  VULKAN_OR_SKIP();
  if (!ctx->info().compute_timestamps) GTEST_SKIP() << ctx->info().name << " writes no timestamps on its compute queue";
  vk::Kernels kernels(*ctx);
  const uint32_t dim = 4096;
  auto x = host_buffer(*ctx, random_floats(dim, 1)), weight = host_buffer(*ctx, std::vector<float>(dim, 1.0f));
  auto y = host_buffer(*ctx, std::vector<float>(dim));
  vk::DispatchList list;
  for (const char* tag : {"first", "second"}) {
    list.tag(tag);
    kernels.rmsnorm(list, x->address(), weight->address(), y->address(), dim, 1, 0, 1e-5f);
  }
  for (Scope scope : {Scope::Steps, Scope::Submits}) {
    SCOPED_TRACE(scope == Scope::Steps ? "steps" : "submits");
    vk::KernelProfiler profiler(*ctx, 8, scope);
    std::vector<std::string> labels;
    for (int submit = 0; submit < 3; ++submit) {
      ctx->run_once([&](VkCommandBuffer cb) { labels = profiler.record(cb, list, "test "); });
      profiler.collect(labels, 0);
    }
    const std::string report = profiler.report();
    const double all = total_ms(report, "all", 0);
    EXPECT_GT(all, 0.0) << report;
    if (scope == Scope::Steps) {
      const std::string kernel = ctx->info().float64 ? "test rmsnorm_f64" : "test rmsnorm";  // Kernels picks the f64 form
      EXPECT_EQ(labels, (std::vector<std::string>{kernel + "/first", kernel + "/second"}));
      const double first = total_ms(report, kernel + "/first", 3), second = total_ms(report, kernel + "/second", 3);
      EXPECT_GT(first, 0.0) << report;
      EXPECT_GT(second, 0.0) << report;
      EXPECT_NEAR(first + second, all, 2e-3) << report;  // the rows are all there is
    } else {
      EXPECT_EQ(labels, std::vector<std::string>{"test submit"});
      EXPECT_NEAR(total_ms(report, "test submit", 3), all, 1e-3) << report;
    }
  }
  vk::KernelProfiler too_small(*ctx, 2, Scope::Steps);  // two steps need three timestamps
  EXPECT_THROW(too_small.record(VK_NULL_HANDLE, list, "test "), std::logic_error);
}

TEST(VulkanProfiler, TheTuningChoosesTheScope) {
  VULKAN_OR_SKIP();
  using Profile = runtime::VulkanTuning::Profile;
  EXPECT_EQ(vk::KernelProfiler::create(*ctx, 4, Profile::Off), nullptr);
  if (!ctx->info().compute_timestamps) {
    EXPECT_THROW(vk::KernelProfiler::create(*ctx, 4, Profile::Steps), std::runtime_error);
    GTEST_SKIP() << ctx->info().name << " writes no timestamps on its compute queue";
  }
  EXPECT_EQ(vk::KernelProfiler::create(*ctx, 4, Profile::Steps)->scope(), Scope::Steps);
  EXPECT_EQ(vk::KernelProfiler::create(*ctx, 4, Profile::Submits)->scope(), Scope::Submits);
}

// The engine's diagnostics: the profile's table when asked, nothing otherwise.
TEST(VulkanProfiler, EngineDiagnosticsHoldTheProfileWhenAsked) {
  VULKAN_OR_SKIP();
  if (!ctx->info().compute_timestamps) GTEST_SKIP() << ctx->info().name << " writes no timestamps on its compute queue";
  const auto model = load_model(preset_a_checkpoint() / "hf");
  const uint32_t ids[] = {1, 2, 3};
  runtime::EngineOptions options;
  options.max_context = 8;
  vk::VulkanEngine quiet(model, options, ctx);
  quiet.forward(ids);
  EXPECT_EQ(quiet.diagnostics(), "");
  options.vulkan.profile = runtime::VulkanTuning::Profile::Steps;
  vk::VulkanEngine profiled(model, options, ctx);
  profiled.forward(ids);
  const std::string report = profiled.diagnostics();
  EXPECT_NE(report.find("Vulkan kernel times on " + ctx->info().name), std::string::npos) << report;
  EXPECT_GT(total_ms(report, "all", 0), 0.0) << report;
  EXPECT_NE(report.find("| prefill embed"), std::string::npos) << report;
}

}  // namespace
}  // namespace gptoss::test

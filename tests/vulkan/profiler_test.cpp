// KernelProfiler (GPTOSS_VK_PROFILE): per step, each labelled step of a command buffer gets its own
// time; per submit (GPTOSS_VK_PROFILE=submit), the command buffer as a whole gets one.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/vulkan/kernel_profiler.h"
#include "runtime/vulkan/kernels.h"
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
      EXPECT_EQ(labels, (std::vector<std::string>{"test rmsnorm/first", "test rmsnorm/second"}));
      const double first = total_ms(report, "test rmsnorm/first", 3), second = total_ms(report, "test rmsnorm/second", 3);
      EXPECT_GT(first, 0.0) << report;
      EXPECT_GT(second, 0.0) << report;
      EXPECT_NEAR(first + second, all, 2e-3) << report;  // the rows are all there is
    } else {
      EXPECT_EQ(labels, std::vector<std::string>{"test submit"});
      EXPECT_NEAR(total_ms(report, "test submit", 3), all, 1e-3) << report;
    }
    EXPECT_EQ(std::getenv("GPTOSS_VK_PROFILE"), nullptr);  // the scope came from the constructor alone
  }
  vk::KernelProfiler too_small(*ctx, 2, Scope::Steps);  // two steps need three timestamps
  EXPECT_THROW(too_small.record(VK_NULL_HANDLE, list, "test "), std::logic_error);
}

TEST(VulkanProfiler, EnvironmentChoosesTheScope) {
  VULKAN_OR_SKIP();
  if (!ctx->info().compute_timestamps) GTEST_SKIP() << ctx->info().name << " writes no timestamps on its compute queue";
  struct Case {
    const char* value;
    bool on;
    Scope scope;
  };
  for (const Case& c : {Case{"1", true, Scope::Steps}, Case{"submit", true, Scope::Submits}, Case{"0", false, Scope::Steps},
                        Case{"", false, Scope::Steps}}) {
    SCOPED_TRACE(std::string("GPTOSS_VK_PROFILE=") + c.value);
    setenv("GPTOSS_VK_PROFILE", c.value, 1);
    const auto profiler = vk::KernelProfiler::from_environment(*ctx, 4);
    unsetenv("GPTOSS_VK_PROFILE");
    ASSERT_EQ(profiler != nullptr, c.on);
    if (profiler) {
      EXPECT_EQ(profiler->scope(), c.scope);
    }
  }
}

}  // namespace
}  // namespace gptoss::test

// The embedded SPIR-V loads and runs on whatever Vulkan device is present (lavapipe in CI).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "runtime/vulkan/vulkan_context.h"
#include "shaders/shader_registry.h"
#include "tests/vulkan/shaders/test_shader_registry.h"

namespace gptoss {
namespace {

TEST(VulkanSmoke, RegistryHoldsCompiledShaders) {
  const auto& reg = shader_registry();
  for (const char* name : {"matvec", "gemm", "attention_decode", "attention_prefill", "expert_gemm", "moe_route"}) {
    ASSERT_TRUE(reg.count(name)) << name;
    const auto words = reg.at(name);
    ASSERT_GT(words.size(), 5u);
    EXPECT_EQ(words[0], 0x07230203u);  // SPIR-V magic
  }
  // Test-only shaders are in the tests' registry, not in the one the tools ship.
  EXPECT_EQ(reg.count("smoke_add"), 0u);
  EXPECT_EQ(test::test_shader_registry().count("smoke_add"), 1u);
}

TEST(VulkanSmoke, AddKernelRunsOnDevice) {
  std::unique_ptr<vk::Context> ctx;
  try {
    ctx = vk::Context::create();
  } catch (const std::exception& e) {
    GTEST_SKIP() << "no Vulkan device: " << e.what() << " (install mesa-vulkan-drivers for lavapipe)";
  }
  const uint32_t n = 1000;
  vk::Buffer x(*ctx, n * 4, true), y(*ctx, n * 4, true);
  EXPECT_NE(x.address(), 0u);
  std::vector<float> in(n);
  for (uint32_t i = 0; i < n; ++i) in[i] = static_cast<float>(i) * 0.5f;
  std::memcpy(x.mapped(), in.data(), n * 4);
  std::memset(y.mapped(), 0, n * 4);
  struct {
    uint64_t x, y;
    uint32_t n;
    float value;
  } push{x.address(), y.address(), n, 3.25f};
  vk::Pipeline pipe(*ctx, "smoke_add", test::test_shader_registry().at("smoke_add"), sizeof push);
  ctx->dispatch_once(pipe, &push, sizeof push, (n + 63) / 64);
  const float* out = static_cast<const float*>(y.mapped());
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(out[i], in[i] + 3.25f) << "element " << i;
  std::printf("device: %s (%s)\n", ctx->info().name.c_str(), ctx->info().driver.c_str());
}

}  // namespace
}  // namespace gptoss

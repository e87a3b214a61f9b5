// The embedded SPIR-V loads and runs on whatever Vulkan device is present (lavapipe in CI).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <span>
#include <string>
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

// The cooperative kernels' KHR form (NAME_khr, rewritten from NAME's SPIR-V by
// scripts/spirv_coop_khr.py): the KHR capability and extension instead of the NV ones, no NV
// instruction left, and as many matrix types, loads, stores and products as the NV form, each KHR
// type with its use (A, B or accumulator) and each load and store with a memory layout.
TEST(VulkanSmoke, KhrFormOfTheCooperativeGemmsIsTheNvFormRewritten) {
  const auto& reg = shader_registry();
  // Opcode counts of a module, and its capabilities.
  struct Counts {
    std::map<uint32_t, int> ops;
    std::map<uint32_t, int> spec_ops;
    std::vector<uint32_t> capabilities;
    std::vector<uint32_t> type_words;  // each cooperative matrix type's word count
  };
  const auto count = [](std::span<const uint32_t> words) {
    Counts c;
    for (size_t at = 5; at < words.size();) {
      const uint32_t n = words[at] >> 16, op = words[at] & 0xFFFF;
      if (n == 0 || at + n > words.size()) {
        ADD_FAILURE() << "malformed instruction at word " << at;
        break;
      }
      ++c.ops[op];
      if (op == 52) ++c.spec_ops[words[at + 3]];  // OpSpecConstantOp, by the opcode it applies
      if (op == 17) c.capabilities.push_back(words[at + 1]);
      if (op == 5358 || op == 4456) c.type_words.push_back(n);
      at += n;
    }
    return c;
  };
  for (const char* name :
       {"gemm_coop", "gemm_coop_wide", "expert_gemm_coop", "expert_gemm_coop_wide", "expert_gemm_coop_short",
        "expert_gemm_coop_direct", "attention_prefill_coop", "coop_layout"}) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(reg.count(name) && reg.count(std::string(name) + "_khr"));
    const Counts nv = count(reg.at(name)), khr = count(reg.at(std::string(name) + "_khr"));
    EXPECT_NE(std::find(nv.capabilities.begin(), nv.capabilities.end(), 5357u), nv.capabilities.end());
    EXPECT_NE(std::find(khr.capabilities.begin(), khr.capabilities.end(), 6022u), khr.capabilities.end());
    EXPECT_EQ(std::find(khr.capabilities.begin(), khr.capabilities.end(), 5357u), khr.capabilities.end());
    for (uint32_t op = 5358; op <= 5362; ++op) EXPECT_EQ(khr.ops.count(op), 0u) << "NV opcode " << op;
    const bool probe = std::string(name) == "coop_layout";
    // A matrix's length: NV's glslang makes it a specialization-constant operation; the KHR form has
    // it as an instruction, since NVIDIA's driver crashed on the KHR length as such an operation.
    const auto count_of = [](const std::map<uint32_t, int>& m, uint32_t op) { return m.count(op) ? m.at(op) : 0; };
    EXPECT_EQ(count_of(khr.ops, 4460), count_of(nv.ops, 5362) + count_of(nv.spec_ops, 5362));
    EXPECT_EQ(count_of(khr.spec_ops, 4460) + count_of(khr.spec_ops, 5362), 0);
    if (probe) {
      EXPECT_GT(count_of(nv.spec_ops, 5362), 0) << "the probe's length, as glslang 12 emits it";
    }
    // type, load, store, product: NV 5358..5361, KHR 4456..4459 (the layout's probe stores none)
    for (uint32_t i = 0; i < 4; ++i) {
      const int n = count_of(nv.ops, 5358 + i);
      if (i != 2 || !probe) {
        EXPECT_GT(n, 0) << i;
      }
      EXPECT_EQ(count_of(khr.ops, 4456 + i), n) << i;
    }
    for (const uint32_t n : nv.type_words) EXPECT_EQ(n, 6u);   // result, component, scope, rows, columns
    for (const uint32_t n : khr.type_words) EXPECT_EQ(n, 7u);  // and the use
  }
}

// KHR takes integer components' signedness from a product's operands, not from the types: the
// rewritten 8-bit product (test shader coop_mma_int8) names all four signed, the f16 one none.
TEST(VulkanSmoke, KhrFormOfAnIntegerProductNamesItsSignedness) {
  const auto operands_of_products = [](std::span<const uint32_t> words) {
    std::vector<std::vector<uint32_t>> out;  // each OpCooperativeMatrixMulAddKHR's words past C
    for (size_t at = 5; at < words.size();) {
      const uint32_t n = words[at] >> 16, op = words[at] & 0xFFFF;
      if (n == 0 || at + n > words.size()) {
        ADD_FAILURE() << "malformed instruction at word " << at;
        break;
      }
      if (op == 4459) out.push_back(std::vector<uint32_t>(words.data() + at + 6, words.data() + at + n));
      at += n;
    }
    return out;
  };
  const auto& reg = test::test_shader_registry();
  const auto int8 = operands_of_products(reg.at("coop_mma_int8_khr"));
  ASSERT_FALSE(int8.empty());
  for (const auto& operands : int8) EXPECT_EQ(operands, std::vector<uint32_t>{0x1 | 0x2 | 0x4 | 0x8});
  const auto f16 = operands_of_products(reg.at("coop_mma_khr"));
  ASSERT_FALSE(f16.empty());
  for (const auto& operands : f16) EXPECT_TRUE(operands.empty());
}

// From a device's list of products: the f16 one of the asked extension, 16x16x16 before any other.
TEST(VulkanSmoke, Fp16ProductShapeIsTakenFromTheListedProducts) {
  using P = vk::CooperativeProduct;
  const std::vector<P> listed{{false, 16, 8, 16, "f16", "f16", "f32", "f32"},  {false, 16, 16, 16, "f16", "f16", "f16", "f16"},
                              {false, 16, 16, 32, "s8", "s8", "s32", "s32"},   {true, 16, 16, 16, "f16", "f16", "f32", "f32"},
                              {false, 16, 16, 16, "f16", "f16", "f32", "f32"}, {true, 16, 8, 16, "f16", "f16", "f32", "f32"}};
  const auto nv = vk::fp16_product_shape(listed, false);
  ASSERT_TRUE(nv.has_value());
  EXPECT_EQ(std::tie(nv->m, nv->n, nv->k), std::make_tuple(16u, 16u, 16u));
  const auto first = vk::fp16_product_shape(std::span(listed).first(3), false);  // no 16x16x16 f32 one: the first
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(std::tie(first->m, first->n, first->k), std::make_tuple(16u, 8u, 16u));
  const auto khr = vk::fp16_product_shape(listed, true);
  ASSERT_TRUE(khr.has_value());
  EXPECT_EQ(std::tie(khr->m, khr->n, khr->k), std::make_tuple(16u, 16u, 16u));
  EXPECT_FALSE(vk::fp16_product_shape(std::span(listed).subspan(1, 2), false).has_value());  // f16 sums, s8 only
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

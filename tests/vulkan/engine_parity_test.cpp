// The Vulkan engine against the CPU reference engine on preset a, stage by stage (embedding,
// every layer's residual stream, final norm, logits), on golden prompts' ids; and decoding
// through the device KV cache against prefills, across the sliding window (8 in preset a).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>

#include "convert/model_io.h"
#include "formats/core/error.h"
#include "runtime/cpu/cpu_engine.h"
#include "runtime/vulkan/kernels.h"
#include "runtime/vulkan/vulkan_engine.h"
#include "tests/test_support.h"
#include "tests/vulkan/vulkan_test_support.h"

namespace gptoss::test {
namespace {

struct Engines {
  CanonicalModel model;
  cpu::CpuEngine cpu;
  vk::VulkanEngine vulkan;
  Engines(CanonicalModel m, std::shared_ptr<vk::Context> ctx)
      : model(std::move(m)), cpu(model), vulkan(model, {}, std::move(ctx)) {}
};

Engines& preset_a_engines(std::shared_ptr<vk::Context> ctx) {
  static Engines engines(load_model(preset_a_checkpoint() / "hf"), std::move(ctx));
  return engines;
}

std::vector<uint32_t> golden_prompt_ids(const std::filesystem::path& goldens, const std::string& name) {
  std::ifstream in(goldens / "a" / "refs-a.json");
  const auto refs = nlohmann::json::parse(in);
  return refs.at("prompts").at(name).get<std::vector<uint32_t>>();
}

using Stages = std::map<std::string, std::vector<float>>;

std::vector<float> run_traced(auto& engine, std::span<const uint32_t> ids, Stages& stages) {
  engine.reset();
  auto observer = [&](const runtime::ActivationView& v) {
    const std::string name = runtime::stage_name(v.stage, v.layer);
    EXPECT_EQ(v.rows, ids.size());
    EXPECT_EQ(v.first_position, 0u);
    stages[name].assign(v.values.begin(), v.values.end());
  };
  return engine.forward(ids, runtime::LogitRows::All, observer);
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) worst = test::worse(worst, std::abs(a[i] - b[i]));
  return static_cast<float>(worst);
}

// Row `row` of logits laid out [rows, vocab].
std::vector<float> logit_row(const std::vector<float>& logits, size_t row, size_t vocab) {
  const auto first = logits.begin() + static_cast<std::ptrdiff_t>(row * vocab);
  return {first, first + static_cast<std::ptrdiff_t>(vocab)};
}

class VulkanEngineParity : public ::testing::TestWithParam<std::string> {};

TEST_P(VulkanEngineParity, EveryStageMatchesTheCpuEngine) {
  GOLDENS_OR_SKIP();
  VULKAN_OR_SKIP();
  auto& engines = preset_a_engines(ctx);
  const auto ids = golden_prompt_ids(*goldens, GetParam());
  Stages cpu_stages, vk_stages;
  const auto cpu_logits = run_traced(engines.cpu, ids, cpu_stages);
  const auto vk_logits = run_traced(engines.vulkan, ids, vk_stages);
  ASSERT_EQ(vk_stages.size(), 3 * engines.model.config.num_layers + 2u);  // and each layer's attention and routing
  EXPECT_EQ(max_abs_diff(vk_stages["embedding"], cpu_stages["embedding"]), 0.0f);
  for (uint32_t l = 0; l < engines.model.config.num_layers; ++l) {
    const std::string router = "router " + std::to_string(l);
    EXPECT_EQ(vk_stages[router], cpu_stages[router]) << router << ": the same experts, in the same order";
    for (const std::string& name : {"attention " + std::to_string(l), "layer " + std::to_string(l)}) {
      const float diff = max_abs_diff(vk_stages[name], cpu_stages[name]);
      EXPECT_LE(diff, 2e-3f) << name;
      std::printf("%s %s max |vulkan - cpu| %.2e\n", GetParam().c_str(), name.c_str(), static_cast<double>(diff));
    }
  }
  EXPECT_LE(max_abs_diff(vk_stages["final norm"], cpu_stages["final norm"]), 2e-3f);
  ASSERT_EQ(vk_logits.size(), ids.size() * engines.vulkan.vocab_size());
  const float logit_diff = max_abs_diff(vk_logits, cpu_logits);
  EXPECT_LE(logit_diff, 1e-3f);
  std::printf("%s logits max |vulkan - cpu| %.2e over %zu positions\n", GetParam().c_str(),
              static_cast<double>(logit_diff), ids.size());
  EXPECT_EQ(engines.vulkan.position(), ids.size());
}

INSTANTIATE_TEST_SUITE_P(GoldenPrompts, VulkanEngineParity, ::testing::Values("harmony", "long"));

// The golden Q8_0 GGUF: every dense matrix is Q8_0 on the device, decoded inside the kernels; its
// decode products as the device's default takes them and through integer dot products wherever the
// device has them (lavapipe has them, not accelerated: by default it decodes to floats).
class VulkanEngineQ8 : public ::testing::TestWithParam<runtime::VulkanTuning::IntegerDot> {
 protected:
  runtime::EngineOptions options() const {
    runtime::EngineOptions o;
    o.max_context = 64;
    o.vulkan.integer_dot = GetParam();
    return o;
  }
};

TEST_P(VulkanEngineQ8, GoldenQ8GgufMatchesTheCpuEngine) {
  GOLDENS_OR_SKIP();
  VULKAN_OR_SKIP();
  const auto model = load_model(*goldens / "a" / "model-q8_0.gguf");
  ASSERT_EQ(model.get(TensorRole::AttnQ, 0).dtype, DType::Q8_0);
  const auto ids = golden_prompt_ids(*goldens, "harmony");
  cpu::CpuEngine cpu_engine(model);
  vk::VulkanEngine vulkan_engine(model, options(), ctx);
  Stages cpu_stages, vk_stages;
  const auto cpu_logits = run_traced(cpu_engine, ids, cpu_stages);
  const auto vk_logits = run_traced(vulkan_engine, ids, vk_stages);
  for (uint32_t l = 0; l < model.config.num_layers; ++l) {
    const std::string name = "layer " + std::to_string(l);
    EXPECT_LE(max_abs_diff(vk_stages[name], cpu_stages[name]), 2e-3f) << name;
  }
  const float logit_diff = max_abs_diff(vk_logits, cpu_logits);
  EXPECT_LE(logit_diff, 1e-3f);
  std::printf("q8_0 gguf harmony logits max |vulkan - cpu| %.2e\n", static_cast<double>(logit_diff));
}

// Decode steps of the Q8_0 GGUF (one token through the cache: its dense products in the decode
// matvec) against the CPU engine's rows.
TEST_P(VulkanEngineQ8, DecodeStepsMatchTheCpuEngine) {
  GOLDENS_OR_SKIP();
  VULKAN_OR_SKIP();
  const auto model = load_model(*goldens / "a" / "model-q8_0.gguf");
  const auto ids = golden_prompt_ids(*goldens, "long");
  ASSERT_GE(ids.size(), 12u);
  cpu::CpuEngine cpu_engine(model);
  vk::VulkanEngine engine(model, options(), ctx);
  const size_t vocab = engine.vocab_size(), prompt = 6;
  const auto cpu_all = cpu_engine.forward(ids, runtime::LogitRows::All);  // row t predicts t + 1
  EXPECT_TRUE(engine.forward(std::span(ids).first(prompt), runtime::LogitRows::None).empty());
  for (size_t step = 0; prompt + step < 12; ++step) {
    const auto decoded = engine.forward(std::span(ids).subspan(prompt + step, 1));
    ASSERT_EQ(decoded.size(), vocab);
    EXPECT_LE(max_abs_diff(decoded, logit_row(cpu_all, prompt + step, vocab)), 1e-3f) << "decode step " << step;
  }
}

INSTANTIATE_TEST_SUITE_P(IntegerDot, VulkanEngineQ8,
                         ::testing::Values(runtime::VulkanTuning::IntegerDot::Auto, runtime::VulkanTuning::IntegerDot::On),
                         [](const auto& p) { return p.param == runtime::VulkanTuning::IntegerDot::On ? "on" : "auto"; });

// `model` on the Vulkan engine against the CPU engine: every stage of a prefill of `prompt` tokens
// (the prefill GEMMs, the grouped expert GEMMs), then decode steps up to `tokens` (the dense
// products in the decode matvec, the experts in the decode expert kernels), within the Q8_0 GGUF's
// tolerances.
void expect_prefill_and_decode_match_cpu(const CanonicalModel& model, std::shared_ptr<vk::Context> ctx,
                                         const std::string& what, size_t prompt = 6, uint32_t tokens = 12) {
  std::vector<uint32_t> ids;
  for (uint32_t i = 0; i < tokens; ++i) ids.push_back((i * 7919 + 13) % model.config.vocab_size);
  runtime::EngineOptions options;
  options.max_context = 64;
  cpu::CpuEngine cpu_engine(model);
  vk::VulkanEngine vulkan_engine(model, options, std::move(ctx));
  Stages cpu_stages, vk_stages;
  const auto cpu_logits = run_traced(cpu_engine, std::span(ids).first(prompt), cpu_stages);
  const auto vk_logits = run_traced(vulkan_engine, std::span(ids).first(prompt), vk_stages);
  ASSERT_EQ(vk_stages.size(), 3 * model.config.num_layers + 2u);  // and each layer's attention and routing
  EXPECT_EQ(max_abs_diff(vk_stages["embedding"], cpu_stages["embedding"]), 0.0f);
  for (uint32_t l = 0; l < model.config.num_layers; ++l) {
    const std::string router = "router " + std::to_string(l);
    EXPECT_EQ(vk_stages[router], cpu_stages[router]) << what << " " << router << ": the same experts, in the same order";
    for (const std::string& name : {"attention " + std::to_string(l), "layer " + std::to_string(l)}) {
      const float diff = max_abs_diff(vk_stages[name], cpu_stages[name]);
      const float magnitude = max_abs_diff(cpu_stages[name], std::vector<float>(cpu_stages[name].size()));
      // 2e-5 of the residual's magnitude, the wide layer's bound (an f32 GEMM's error): the
      // cooperative GEMMs' precise mode keeps a block type's weight as f16 hi + lo, the lo part
      // rounded for the types whose values need more than 22 bits (IQ2_XS: 1e-5 on an H200).
      EXPECT_LE(diff, 2e-5f * magnitude) << name;
      std::printf("%s %s max |vulkan - cpu| %.2e of max |cpu| %.1f\n", what.c_str(), name.c_str(),
                  static_cast<double>(diff), static_cast<double>(magnitude));
    }
  }
  EXPECT_LE(max_abs_diff(vk_stages["final norm"], cpu_stages["final norm"]), 2e-3f);
  EXPECT_LE(max_abs_diff(vk_logits, cpu_logits), 1e-3f);
  const size_t vocab = vulkan_engine.vocab_size();
  cpu_engine.reset();
  const auto cpu_all = cpu_engine.forward(ids, runtime::LogitRows::All);  // row t predicts t + 1
  for (size_t step = 0; prompt + step < ids.size(); ++step) {
    const auto decoded = vulkan_engine.forward(std::span(ids).subspan(prompt + step, 1));
    ASSERT_EQ(decoded.size(), vocab);
    const float diff = max_abs_diff(decoded, logit_row(cpu_all, prompt + step, vocab));
    EXPECT_LE(diff, 1e-3f) << "decode step " << step;
    std::printf("%s decode step %zu logits max |vulkan - cpu| %.2e\n", what.c_str(), step, static_cast<double>(diff));
  }
}

// The mixed golden (data/quant-goldens/mixed.gguf: dense tensors in each of llama-quantize's 18
// types, the experts MXFP4): every type decoded inside the kernels (the embedding gather of Q4_K,
// the prefill GEMMs and decode products of the projections in the 16 others, the unembedding in
// Q6_K).
TEST(VulkanEngineQuantTypes, MixedGoldenMatchesTheCpuEngine) {
  VULKAN_OR_SKIP();
  const auto model = load_model(quant_goldens_mixed_gguf());
  EXPECT_EQ(model.get(TensorRole::Embedding).dtype, DType::Q4_K);
  EXPECT_EQ(model.get(TensorRole::Unembedding).dtype, DType::Q6_K);
  expect_prefill_and_decode_match_cpu(model, ctx, "mixed golden");
}

// Experts in Q8_0 and Q4_1 (as fine-tunes ship them; canonical_model.h's other expert form), each
// in mlp1 and mlp2 of a layer, beside MXFP4 layers: the expert kernels read them through load8.
TEST(VulkanEngineQuantTypes, Q8_0AndQ4_1ExpertsMatchTheCpuEngine) {
  VULKAN_OR_SKIP();
  auto model = load_model(preset_a_checkpoint() / "hf");
  model = with_experts_as(model, 0, TensorRole::Mlp1Blocks, DType::Q8_0);
  model = with_experts_as(model, 0, TensorRole::Mlp2Blocks, DType::Q4_1);
  model = with_experts_as(model, 1, TensorRole::Mlp1Blocks, DType::Q4_1);
  model = with_experts_as(model, 1, TensorRole::Mlp2Blocks, DType::Q8_0);
  expect_prefill_and_decode_match_cpu(model, ctx, "Q8_0/Q4_1 experts");
}

// Every matrix of one small model in one type (small_model_in: the embedding gather, the
// projections', router's and unembedding's products and the experts' kernels all decode it), a
// prefill of 4 tokens and 2 decode steps, for one type of each family of decoders: Q5_0 (ggml's
// first quantizations: a fifth bit apart, its block of 22 bytes), Q6_K (the 256-value K types) and
// IQ2_XS (the grid types). Not every type: on lavapipe each costs seconds of shader compilation,
// and the kernel tests take every type through the same load8 (*InEveryBlockType,
// ExpertKernelsInOtherTypes); the CPU engine's CpuEngineEveryType takes every type.
TEST(VulkanEngineQuantTypes, ModelsInOneTypeMatchTheCpuEngine) {
  VULKAN_OR_SKIP();
  for (DType type : {DType::Q5_0, DType::Q6_K, DType::IQ2_XS}) {
    SCOPED_TRACE(std::string(dtype_name(type)));
    const auto model = small_model_in(type);
    EXPECT_EQ(model.get(TensorRole::Mlp2Blocks, 1).dtype, type);
    expect_prefill_and_decode_match_cpu(model, ctx, std::string(dtype_name(type)), 4, 6);
  }
}

TEST(VulkanEngineKvCache, DecodeAfterPrefillEqualsLongerPrefill) {
  GOLDENS_OR_SKIP();
  VULKAN_OR_SKIP();
  auto& engines = preset_a_engines(ctx);
  auto& engine = engines.vulkan;
  const auto ids = golden_prompt_ids(*goldens, "long");
  const size_t vocab = engine.vocab_size();
  engines.cpu.reset();
  const auto cpu_all = engines.cpu.forward(ids, runtime::LogitRows::All);  // row t predicts t + 1
  for (size_t t : {1u, 6u, 8u, 9u, 15u}) {
    SCOPED_TRACE("T = " + std::to_string(t));
    engine.reset();
    EXPECT_TRUE(engine.forward(std::span(ids).first(t), runtime::LogitRows::None).empty());
    ASSERT_EQ(engine.position(), t);
    // Four or more decode steps, each one token through the cache.
    for (size_t step = 0; step < 5; ++step) {
      const auto decoded = engine.forward(std::span(ids).subspan(t + step, 1));
      ASSERT_EQ(decoded.size(), vocab);
      EXPECT_LE(max_abs_diff(decoded, logit_row(cpu_all, t + step, vocab)), 1e-3f) << "decode step " << step;
      if (step == 0) {
        const auto resume = engine.position();
        engine.reset();
        const auto prefilled = engine.forward(std::span(ids).first(t + 1));
        // The batched prefill sums in another order than the decode kernels: 1e-4 relative.
        float largest = 0;
        for (float v : prefilled) largest = std::max(largest, std::abs(v));
        EXPECT_LE(max_abs_diff(decoded, prefilled), 1e-4f * largest);
        // Re-run the prefix so the cache continues from t + 1.
        ASSERT_EQ(engine.position(), resume);
      }
    }
  }
}

// Decode attention's two shapes live in two recordings of the decode step, picked by the step's
// position: while the keys fit attention_range_keys() and beyond. Steps on either side of the
// edge (a full layer's keys from 254 to 259) against the CPU engine: a step past the edge run with
// the short shape's recording would leave a full layer's attention output unwritten (that shape
// returns beyond its keys). With the default lanes per key in decode attention and with one.
class VulkanEngineAttentionEdge : public ::testing::TestWithParam<uint32_t> {};

TEST_P(VulkanEngineAttentionEdge, DecodeStepsAcrossTheEdgeOfTheShortAttentionShape) {
  GOLDENS_OR_SKIP();
  VULKAN_OR_SKIP();
  auto& engines = preset_a_engines(ctx);
  runtime::EngineOptions options;
  options.vulkan.attention_key_lanes = GetParam();
  vk::VulkanEngine engine(engines.model, options, ctx);
  const auto prompt = golden_prompt_ids(*goldens, "random");
  const size_t edge = vk::Kernels(*ctx).attention_range_keys(), first = edge - 3, steps = 6, vocab = engine.vocab_size();
  std::vector<uint32_t> ids;
  while (ids.size() < first + steps) ids.push_back(prompt[ids.size() % prompt.size()]);
  engines.cpu.reset();
  // The CPU engine's rows of the decoded positions only (first .. first + steps - 1).
  const auto cpu_rows = engines.cpu.forward(ids, runtime::LogitRows::range(first, steps));
  ASSERT_EQ(cpu_rows.size(), steps * vocab);
  engine.reset();
  EXPECT_TRUE(engine.forward(std::span(ids).first(first), runtime::LogitRows::None).empty());
  for (size_t step = 0; step < steps; ++step) {
    const size_t position = first + step;
    const auto decoded = engine.forward(std::span(ids).subspan(position, 1));
    ASSERT_EQ(decoded.size(), vocab);
    EXPECT_LE(max_abs_diff(decoded, logit_row(cpu_rows, step, vocab)), 1e-3f) << "decode step at position " << position;
  }
  // The greedy step (its own recordings) past the edge: the CPU's argmax of the next row.
  const size_t position = first + steps - 1;
  engine.reset();
  const uint32_t token = engine.forward_greedy(std::span(ids).first(position + 1));
  const auto row = logit_row(cpu_rows, steps - 1, vocab);
  EXPECT_EQ(token, static_cast<uint32_t>(std::max_element(row.begin(), row.end()) - row.begin()));
}

INSTANTIATE_TEST_SUITE_P(KeyLanes, VulkanEngineAttentionEdge, ::testing::Values(0u, 1u),
                         [](const auto& p) { return p.param == 0 ? std::string("defaults") : "one_lane_per_key"; });

// An f16 KV cache (EngineOptions::kv_cache): the Vulkan engine against the CPU engine with the same
// cache. Both round every key and value to f16 as they store it, so they agree far more closely than
// either agrees with an f32 cache; not as closely as two f32 engines, because a value the two compute
// on either side of an f16 rounding boundary lands one f16 step (2^-9 near 3) apart: preset a's
// first sliding layer has one such value (V, position 0), 7e-3 in that layer's output through the
// attention output projection. Decode steps through the f16 cache agree with the CPU's prefill as
// closely; the cache takes half the device memory.
TEST(VulkanEngineKvCache, F16CacheMatchesTheCpuEngineWithAnF16Cache) {
  GOLDENS_OR_SKIP();
  VULKAN_OR_SKIP();
  const auto& model = preset_a_engines(ctx).model;
  const auto& c = model.config;
  const auto ids = golden_prompt_ids(*goldens, "long");
  runtime::EngineOptions options;
  options.max_context = 64;
  options.kv_cache = runtime::KvCacheType::F16;
  cpu::CpuEngine cpu_f16(model, cpu::CpuPrecision::F32, options.max_context, runtime::KvCacheType::F16);
  const uint64_t before_f16 = ctx->allocated_bytes();
  vk::VulkanEngine vulkan_f16(model, options, ctx);
  const uint64_t f16_engine_bytes = ctx->allocated_bytes() - before_f16;
  Stages cpu_stages, vk_stages, cpu_f32_stages;
  const auto cpu_logits = run_traced(cpu_f16, ids, cpu_stages);
  const auto vk_logits = run_traced(vulkan_f16, ids, vk_stages);
  const auto cpu_f32_logits = run_traced(preset_a_engines(ctx).cpu, ids, cpu_f32_stages);
  for (uint32_t l = 0; l < c.num_layers; ++l) {
    const std::string name = "layer " + std::to_string(l);
    const float diff = max_abs_diff(vk_stages[name], cpu_stages[name]);
    const float rounding = max_abs_diff(cpu_f32_stages[name], cpu_stages[name]);
    EXPECT_LE(diff, rounding / 4) << name;
    std::printf("f16 KV cache, %s: max |vulkan - cpu| %.2e, |cpu f16 - cpu f32 cache| %.2e\n", name.c_str(),
                static_cast<double>(diff), static_cast<double>(rounding));
  }
  const float logit_diff = max_abs_diff(vk_logits, cpu_logits);
  const float rounding = max_abs_diff(cpu_f32_logits, cpu_logits);
  std::printf("f16 KV cache, logits: max |vulkan - cpu| %.2e, |cpu f16 - cpu f32 cache| %.2e\n",
              static_cast<double>(logit_diff), static_cast<double>(rounding));
  EXPECT_LE(logit_diff, rounding / 4);
  EXPECT_LE(logit_diff, 5e-3f);

  // Decode steps through the f16 cache, across the sliding window (8), against the CPU's prefill.
  const size_t vocab = vulkan_f16.vocab_size(), t = 6;
  vulkan_f16.reset();
  vulkan_f16.forward(std::span(ids).first(t), runtime::LogitRows::None);
  for (size_t step = 0; step < 5; ++step) {
    const auto decoded = vulkan_f16.forward(std::span(ids).subspan(t + step, 1));
    const auto cpu_row = logit_row(cpu_logits, t + step, vocab);
    EXPECT_LE(max_abs_diff(decoded, cpu_row), rounding / 4) << "decode step " << step;
  }

  // Half the cache's bytes: every layer holds 64 slots here (the context; a chunk is 64 too).
  const uint64_t before_f32 = ctx->allocated_bytes();
  vk::VulkanEngine vulkan_f32(model, {.max_context = 64}, ctx);
  const uint64_t f32_engine_bytes = ctx->allocated_bytes() - before_f32;
  const uint64_t f32_cache = uint64_t{c.num_layers} * 2 * 64 * c.kv_rows() * 4;
  EXPECT_EQ(f32_engine_bytes - f16_engine_bytes, f32_cache / 2);
}

TEST(VulkanEngineKvCache, RejectsTokensOutsideTheVocabularyAndContext) {
  VULKAN_OR_SKIP();
  auto& engine = preset_a_engines(ctx).vulkan;
  engine.reset();
  const uint32_t bad[] = {engine.vocab_size()};
  EXPECT_THROW(engine.forward(bad), std::out_of_range);
  EXPECT_EQ(engine.position(), 0u);
  EXPECT_TRUE(engine.forward({}).empty());
}

// A tensor whose bytes do not match its shape, or whose encoding the kernels cannot read, is a
// FormatError naming it, before anything runs.
TEST(VulkanEngineLoad, RefusesTensorsTheKernelsCannotRead) {
  VULKAN_OR_SKIP();
  const auto checkpoint = preset_a_checkpoint() / "hf";
  {
    auto model = load_model(checkpoint);
    for (auto& t : model.tensors)
      if (t.spec.role == TensorRole::AttnK && t.spec.layer == 2) t.source = std::make_shared<OwnedSource>(std::vector<uint8_t>(10));
    try {
      vk::VulkanEngine engine(model, {}, ctx);
      FAIL() << "a truncated tensor was accepted";
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find("layers.2.attn_k.weight"), std::string::npos) << e.what();
    }
  }
  {
    auto model = load_model(checkpoint);
    for (auto& t : model.tensors)
      if (t.spec.role == TensorRole::FinalNorm) t.dtype = DType::F64;
    try {
      vk::VulkanEngine engine(model, {}, ctx);
      FAIL() << "an F64 tensor was accepted";
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find("cannot decode"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace gptoss::test

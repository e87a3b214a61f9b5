// The batched prefill against token-by-token prefill through the decode kernels (the same engine
// with prefill_chunk 1): every stage and the logits of every row within 1e-4 of the stage's
// largest value, for prompt lengths up to 40 tokens of the 70-token "random" prompt (crossing the
// sliding window of 8 on the even layers), for chunks that cut a prompt in several passes, and for
// a model whose embedding exceeds lavapipe's 128 MiB storage-buffer binding limit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "convert/model_io.h"
#include "convert/synthesize.h"
#include "runtime/cpu/cpu_engine.h"
#include "runtime/vulkan/vulkan_engine.h"
#include "tests/cpu/golden_refs.h"
#include "tests/test_support.h"
#include "tests/vulkan/vulkan_test_support.h"

namespace gptoss::test {
namespace {

using Stages = std::map<std::string, std::vector<float>>;

Stages run_all(runtime::Engine& engine, std::span<const uint32_t> ids, runtime::LogitRows rows = runtime::LogitRows::All) {
  Stages stages;
  engine.reset();
  auto logits = engine.forward(ids, rows, [&](const runtime::ActivationView& v) {
    const std::string name = runtime::stage_name(v.stage, v.layer);
    stages[name].assign(v.values.begin(), v.values.end());
  });
  stages["logits"] = std::move(logits);
  return stages;
}

// max |a - b| / max |b| over every stage; names the worst stage.
double worst_relative(const Stages& a, const Stages& b, std::string* where) {
  double worst = 0;
  for (const auto& [name, values] : b) {
    const auto& other = a.at(name);
    EXPECT_EQ(other.size(), values.size()) << name;
    double largest = 0, diff = 0;
    for (size_t i = 0; i < values.size(); ++i) {
      largest = std::max(largest, static_cast<double>(std::abs(values[i])));
      diff = std::max(diff, static_cast<double>(std::abs(values[i] - other[i])));
    }
    const double relative = diff / std::max(largest, 1e-30);
    if (relative > worst) {
      worst = relative;
      *where = name;
    }
  }
  return worst;
}

struct Pair {
  CanonicalModel model;
  vk::VulkanEngine batched, stepwise;
  Pair(CanonicalModel m, std::shared_ptr<vk::Context> ctx, uint32_t chunk)
      : model(std::move(m)), batched(model, options(chunk), ctx), stepwise(model, options(1), ctx) {}
  static runtime::EngineOptions options(uint32_t chunk) {
    runtime::EngineOptions o;
    o.max_context = 128;
    o.prefill_chunk = chunk;
    return o;
  }
};

// The lengths where a prompt's shape meets the kernels' (shaders/kernel_abi.h): every length up to
// 9 (the GEMMs' 4 tokens per invocation, the sliding window of 8 and its first slide), each side
// of every multiple of 8 (prefill attention's query blocks: ATTENTION_ROWS / 8 query heads per KV
// head = 8 queries), 31..33 (a block of ATTENTION_KEY_BLOCK = 32 keys and the next one started)
// and the longest. A length between these is a combination the listed ones already take apart:
// the same tiles, partly filled the same way. The GEMM and expert tiles (GEMM_TILE_M = 64 rows)
// hold every one of these lengths in one tile, full or partial, as they would 10..14.
constexpr size_t kLengths[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 23, 24, 25, 31, 32, 33, 39, 40};

TEST(VulkanBatchedPrefill, EqualsTokenByTokenForTheLengthsAtTheKernelsTiles) {
  GOLDENS_OR_SKIP();
  VULKAN_OR_SKIP();
  GoldenRefs refs(*goldens);
  const auto random_ids = refs.ids("random");
  const auto ids = std::span<const uint32_t>(random_ids).first(std::end(kLengths)[-1]);  // the longest
  Pair engines(load_model(preset_a_checkpoint() / "hf"), ctx, 512);
  const size_t vocab = engines.model.config.vocab_size;
  // Token by token, a position's results do not depend on the tokens after it: one 40-token run
  // gives the reference rows of every shorter prompt. Its logits: the last row of each length and
  // the rows the longest prompt's multi-row check below reads (the unembedding of 201088 rows is
  // most of a row's work on lavapipe); the other rows' logits stay zero.
  constexpr size_t kRowsFrom = 30;  // the multi-row check: rows 30..39, across the attention's 32-key block
  Stages reference;
  reference["logits"].assign(ids.size() * vocab, 0.0f);
  engines.stepwise.reset();
  for (size_t i = 0; i < ids.size(); ++i) {
    const bool wanted = i >= kRowsFrom || std::find(std::begin(kLengths), std::end(kLengths), i + 1) != std::end(kLengths);
    const auto row = engines.stepwise.forward(ids.subspan(i, 1), wanted ? runtime::LogitRows::Last : runtime::LogitRows::None,
                                              [&](const runtime::ActivationView& v) {
                                                auto& all = reference[runtime::stage_name(v.stage, v.layer)];
                                                all.insert(all.end(), v.values.begin(), v.values.end());
                                              });
    if (wanted) std::copy(row.begin(), row.end(), reference["logits"].begin() + static_cast<std::ptrdiff_t>(i * vocab));
  }
  double worst = 0;
  for (size_t t : kLengths) {
    Stages mine, expected;
    engines.batched.reset();
    const auto last = engines.batched.forward(ids.first(t), runtime::LogitRows::Last, [&](const runtime::ActivationView& v) {
      const std::string name = runtime::stage_name(v.stage, v.layer);
      mine[name].assign(v.values.begin(), v.values.end());
      const auto& all = reference.at(name);
      expected[name].assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(t * v.cols));
    });
    mine["logits"] = last;
    const auto& logits = reference.at("logits");
    expected["logits"].assign(logits.begin() + static_cast<std::ptrdiff_t>((t - 1) * vocab),
                              logits.begin() + static_cast<std::ptrdiff_t>(t * vocab));
    std::string where;
    const double relative = worst_relative(mine, expected, &where);
    EXPECT_LE(relative, 1e-4) << "T = " << t << ", worst at " << where;
    worst = test::worse(worst, relative);
  }
  // And the rows 30..39 of the longest prompt's logits in one forward (the GEMM's unembedding of
  // several rows), with every stage.
  const auto rows = runtime::LogitRows::range(kRowsFrom, ids.size() - kRowsFrom);
  Stages expected = reference;
  expected["logits"].erase(expected["logits"].begin(), expected["logits"].begin() + static_cast<std::ptrdiff_t>(kRowsFrom * vocab));
  std::string where;
  EXPECT_LE(worst_relative(run_all(engines.batched, ids, rows), expected, &where), 1e-4) << where;
  std::printf("batched vs token-by-token prefill, T up to 40: worst relative difference %.2e\n", worst);
}

TEST(VulkanBatchedPrefill, ChunksThatCutThePromptAndDecodeAfterThem) {
  GOLDENS_OR_SKIP();
  VULKAN_OR_SKIP();
  GoldenRefs refs(*goldens);
  const auto ids = refs.ids("random");
  // Chunks of 7 put boundaries inside and across the 8-token window; the ring holds window + 7
  // = 15 positions, so 32 tokens (four chunks and a partial one) wrap it twice.
  Pair engines(load_model(preset_a_checkpoint() / "hf"), ctx, 7);
  std::string where;
  constexpr size_t kPrompt = 32;
  const auto prompt = std::span(ids).first(kPrompt);
  // Every stage of every row; the logits of rows 13 and 14, either side of the chunk boundary (the
  // unembedding of 201088 rows is most of a row's work on lavapipe, and the first test has every
  // row's logits of one prefill).
  const auto rows = runtime::LogitRows::range(13, 2);
  EXPECT_LE(worst_relative(run_all(engines.batched, prompt, rows), run_all(engines.stepwise, prompt, rows), &where), 1e-4)
      << where;
  // Then decode steps continue from the chunked cache.
  for (size_t step = 0; step < 4; ++step) {
    const auto next = std::span(ids).subspan(kPrompt + step, 1);
    const auto a = engines.batched.forward(next), b = engines.stepwise.forward(next);
    float largest = 0, diff = 0;
    for (size_t i = 0; i < b.size(); ++i) {
      largest = std::max(largest, std::abs(b[i]));
      diff = std::max(diff, std::abs(a[i] - b[i]));
    }
    EXPECT_LE(diff, 1e-4f * largest) << "decode step " << step;
  }
}

// Embedding and unembedding of 201088 x 384 BF16 (154 MB) exceed lavapipe's 128 MiB binding range:
// the kernels read them through device addresses, and the result is the CPU engine's.
TEST(VulkanLargeTensors, EmbeddingBeyondTheBindingRangeRuns) {
  VULKAN_OR_SKIP();
  const SynthPreset preset{"wide-vocab", 1, 384, 64, 4, 1, 64, 4, 2, 201088, 8, 1};
  const auto model = synthesize_model(preset);
  const uint64_t embedding_bytes = model.get(TensorRole::Embedding).source->size();
  EXPECT_GT(embedding_bytes, uint64_t{128} << 20);
  if (ctx->info().max_storage_buffer_range < embedding_bytes)
    std::printf("embedding %llu bytes > maxStorageBufferRange %llu of %s\n",
                static_cast<unsigned long long>(embedding_bytes),
                static_cast<unsigned long long>(ctx->info().max_storage_buffer_range), ctx->info().name.c_str());
  runtime::EngineOptions options;
  options.max_context = 16;
  vk::VulkanEngine vulkan(model, options, ctx);
  cpu::CpuEngine cpu(model);
  const uint32_t ids[] = {7, 201087, 100000, 42, 199999};
  const auto a = vulkan.forward(ids, runtime::LogitRows::All), b = cpu.forward(ids, runtime::LogitRows::All);
  ASSERT_EQ(a.size(), b.size());
  float largest = 0, diff = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    largest = std::max(largest, std::abs(b[i]));
    diff = std::max(diff, std::abs(a[i] - b[i]));
  }
  EXPECT_LE(diff, 1e-4f * largest);
}

}  // namespace
}  // namespace gptoss::test

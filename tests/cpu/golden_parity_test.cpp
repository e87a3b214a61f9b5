// The CPU engine against transformers 5.17 fp32 (shared/goldens/a/refs-a.safetensors): every
// stage of every golden prompt, from each checkpoint layout and format we can read.
#include <gtest/gtest.h>

#include <stdexcept>

#include "convert/model_io.h"
#include "tests/cpu/engines.h"
#include "tests/cpu/golden_compare.h"
#include "tests/test_support.h"

namespace gptoss::test {
namespace {

constexpr float kTolerance = 1e-3f;
// The residual stream grows to |x| ~ 110 by layer 3, where f32 itself carries ~1e-5 relative
// rounding: rerunning every matrix product with double accumulation (GPTOSS experiment, see
// docs/cpu-engine.md) still left 7.2e-4 against the goldens on "random", i.e. about half of our
// 1.16e-3 is the golden's own f32 rounding. Layer outputs therefore get 2e-3; everything after
// the final norm (|x| ~ 4) stays at 1e-3 and in practice is below 1e-4.
constexpr float kResidualTolerance = 2e-3f;

void expect_all_prompts_match(cpu::CpuEngine& engine, const GoldenRefs& refs, const std::string& label,
                              float tolerance, float residual_tolerance = kResidualTolerance) {
  for (const auto& prompt : golden_prompts()) {
    SCOPED_TRACE(label + " prompt " + prompt);
    const auto errors = compare_with_goldens(engine, refs, prompt);
    std::printf("%s\n", describe(label + " " + prompt, errors).c_str());
    EXPECT_LE(errors.embed, tolerance);
    for (size_t l = 0; l < errors.layers.size(); ++l) EXPECT_LE(errors.layers[l], residual_tolerance) << "layer " << l;
    EXPECT_LE(errors.final_norm, tolerance);
    EXPECT_LE(errors.logits_last, tolerance);
    EXPECT_LE(errors.logits_probe, tolerance);
    EXPECT_LE(errors.lse, tolerance);
    EXPECT_LE(errors.top8, tolerance);
    EXPECT_EQ(errors.argmax_mismatches, 0);
  }
}

TEST(CpuGoldenParity, HuggingFaceCheckpointMatchesTransformers) {
  GOLDENS_OR_SKIP();
  expect_all_prompts_match(hf_engine(), GoldenRefs(*goldens), "hf", kTolerance);
}

TEST(CpuGoldenParity, OriginalCheckpointMatchesTransformers) {
  GOLDENS_OR_SKIP();
  expect_all_prompts_match(original_engine(), GoldenRefs(*goldens), "original", kTolerance);
}

// Loads a model through load_model, skipping while that format's reader is still a placeholder.
std::optional<CanonicalModel> load_or_skip_reason(const std::filesystem::path& path, std::string& reason) {
  try {
    return load_model(path);
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).find("not implemented") == std::string::npos) throw;
    reason = e.what();
    return std::nullopt;
  }
}

TEST(CpuGoldenParity, GoldenModelBinMatchesTransformers) {
  GOLDENS_OR_SKIP();
  std::string reason;
  auto model = load_or_skip_reason(*goldens / "a" / "model.bin", reason);
  if (!model) GTEST_SKIP() << "model.bin reader has not landed: " << reason;
  cpu::CpuEngine engine(*model);
  expect_all_prompts_match(engine, GoldenRefs(*goldens), "model.bin", kTolerance);
}

TEST(CpuGoldenParity, Bf16GgufMatchesTransformers) {
  GOLDENS_OR_SKIP();
  TempDir dir;
  const auto path = dir / "a-bf16.gguf";
  try {
    WriteOptions options;
    options.dense_dtype = DType::BF16;
    write_model(load_model(preset_a_checkpoint() / "hf"), path, options);
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).find("not implemented") == std::string::npos) throw;
    GTEST_SKIP() << "GGUF writer has not landed: " << e.what();
  }
  std::string reason;
  auto model = load_or_skip_reason(path, reason);
  if (!model) GTEST_SKIP() << "GGUF reader has not landed: " << reason;
  cpu::CpuEngine engine(*model);
  expect_all_prompts_match(engine, GoldenRefs(*goldens), "gguf-bf16", kTolerance);
}

// The golden llama.cpp Q8_0 GGUF: dense weights carry Q8_0 rounding, so the engine is only
// expected within the Q8_0 error. Our activations stay f32, so this is well inside llama.cpp's
// own 0.19-1.39 distance (which also quantizes activations).
TEST(CpuGoldenParity, GoldenQ8_0GgufWithinQuantizationError) {
  GOLDENS_OR_SKIP();
  std::string reason;
  auto model = load_or_skip_reason(*goldens / "a" / "model-q8_0.gguf", reason);
  if (!model) GTEST_SKIP() << "GGUF reader has not landed: " << reason;
  cpu::CpuEngine engine(*model);
  GoldenRefs refs(*goldens);
  for (const auto& prompt : golden_prompts()) {
    const auto errors = compare_with_goldens(engine, refs, prompt);
    std::printf("%s\n", describe("gguf-q8_0 " + prompt, errors).c_str());
    EXPECT_LE(errors.worst(), 0.5f) << prompt;
  }
}

}  // namespace
}  // namespace gptoss::test

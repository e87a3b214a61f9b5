// The CPU engine against transformers 5.17 fp32 (shared/goldens/a/refs-a.safetensors): every
// stage of every golden prompt, from each checkpoint layout and format we can read.
#include <gtest/gtest.h>

#include "convert/model_io.h"
#include "formats/codecs/float_codec.h"
#include "tests/cpu/engines.h"
#include "tests/cpu/golden_compare.h"
#include "tests/test_support.h"

namespace gptoss::test {
namespace {

constexpr float kTolerance = 1e-3f;
// The f32 engine's residual stream: it grows to |x| ~ 110 by layer 3 of preset a's random layers,
// where two f32 implementations summing in different orders drift ~1e-5 apart relatively. The f32
// engine measures up to 1.16e-3 there ("random", layer 3) while the f64 engine on the same weights
// measures 7.2e-4 (docs/cpu-engine.md): the rest is the golden's own f32 rounding. So the f64 engine
// meets 1e-3 at every stage, and the f32 engine gets 2e-3 on the residual stream only; everything
// after the final norm (|x| ~ 4) holds 1e-3 in both and in practice is below 1e-4.
constexpr float kF32ResidualTolerance = 2e-3f;

void expect_all_prompts_match(cpu::CpuEngine& engine, const GoldenRefs& refs, const std::string& label) {
  const float residual_tolerance = engine.precision() == cpu::CpuPrecision::F64 ? kTolerance : kF32ResidualTolerance;
  for (const auto& prompt : golden_prompts()) {
    const std::string name = label + "/" + std::string(cpu::precision_name(engine.precision())) + " " + prompt;
    SCOPED_TRACE(name);
    const auto errors = compare_with_goldens(engine, refs, prompt);
    std::printf("%s\n", describe(name, errors).c_str());
    EXPECT_LE(errors.embed, kTolerance);
    for (size_t l = 0; l < errors.layers.size(); ++l) EXPECT_LE(errors.layers[l], residual_tolerance) << "layer " << l;
    EXPECT_LE(errors.final_norm, kTolerance);
    EXPECT_LE(errors.logits_last, kTolerance);
    EXPECT_LE(errors.logits_probe, kTolerance);
    EXPECT_LE(errors.lse, kTolerance);
    EXPECT_LE(errors.top8, kTolerance);
    EXPECT_EQ(errors.argmax_mismatches, 0);
  }
}

// Both arithmetics of the engine on one model.
void expect_model_matches(const CanonicalModel& model, const GoldenRefs& refs, const std::string& label) {
  for (auto precision : {cpu::CpuPrecision::F32, cpu::CpuPrecision::F64}) {
    cpu::CpuEngine engine(model, precision);
    expect_all_prompts_match(engine, refs, label);
  }
}

TEST(CpuGoldenParity, HuggingFaceCheckpointMatchesTransformers) {
  GOLDENS_OR_SKIP();
  expect_model_matches(load_model(preset_a_checkpoint() / "hf"), GoldenRefs(*goldens), "hf");
}

TEST(CpuGoldenParity, OriginalCheckpointMatchesTransformers) {
  GOLDENS_OR_SKIP();
  expect_model_matches(load_model(preset_a_checkpoint() / "original"), GoldenRefs(*goldens), "original");
}

TEST(CpuGoldenParity, GoldenModelBinMatchesTransformers) {
  GOLDENS_OR_SKIP();
  expect_model_matches(load_model(*goldens / "a" / "model.bin"), GoldenRefs(*goldens), "model.bin");
}

TEST(CpuGoldenParity, Bf16GgufMatchesTransformers) {
  GOLDENS_OR_SKIP();
  TempDir dir;
  const auto path = dir / "a-bf16.gguf";
  WriteOptions options;
  options.dense_dtype = DType::BF16;
  write_model(load_model(preset_a_checkpoint() / "hf"), path, options);
  expect_model_matches(load_model(path), GoldenRefs(*goldens), "gguf-bf16");
}

// Rounds a weight through Q8_0 the way llama.cpp's converter does (ggml's reference quantizer).
void round_through_q8_0(std::vector<float>& values) {
  std::vector<uint8_t> encoded(values.size() / 32 * 34);
  encode_from_f32(DType::Q8_0, values.data(), values.size(), encoded.data());
  decode_to_f32(DType::Q8_0, encoded.data(), values.size(), values.data());
}

// The golden llama.cpp Q8_0 GGUF stores the embedding, the attention matrices and the
// unembedding as Q8_0 (norms, biases, sinks and the router as F32; experts MXFP4). The engine
// must see exactly ggml's Q8_0 of the Hugging Face weights, and its distance from transformers
// is then the Q8_0 error, which this test measures (docs/cpu-engine.md) and bounds loosely:
// llama.cpp itself, which also quantizes activations, is 0.19-1.39 away on the last logits.
TEST(CpuGoldenParity, GoldenQ8_0GgufIsOurQ8_0OfTheCheckpoint) {
  GOLDENS_OR_SKIP();
  const auto gguf = cpu::decode_cpu_weights(load_model(*goldens / "a" / "model-q8_0.gguf"));
  auto expected = cpu::decode_cpu_weights(load_model(preset_a_checkpoint() / "hf"));
  auto expected_embedding = expected.embedding.decode_all();
  round_through_q8_0(expected_embedding);
  round_through_q8_0(expected.unembedding);
  for (auto& layer : expected.layers)
    for (auto* matrix : {&layer.q, &layer.k, &layer.v, &layer.out}) round_through_q8_0(*matrix);
  auto expect_same = [](const std::vector<float>& got, const std::vector<float>& want, const std::string& name) {
    ASSERT_EQ(got.size(), want.size()) << name;
    EXPECT_EQ(max_abs_diff(got.data(), want.data(), got.size()), 0.0f) << name;
  };
  expect_same(gguf.embedding.decode_all(), expected_embedding, "embedding");
  expect_same(gguf.unembedding, expected.unembedding, "unembedding");
  for (size_t l = 0; l < gguf.layers.size(); ++l) {
    const auto &g = gguf.layers[l], &e = expected.layers[l];
    const std::string at = " of layer " + std::to_string(l);
    expect_same(g.q, e.q, "q" + at);
    expect_same(g.k, e.k, "k" + at);
    expect_same(g.v, e.v, "v" + at);
    expect_same(g.out, e.out, "out" + at);
    EXPECT_EQ(g.router, e.router) << "router" << at;
    expect_same(g.mlp1.decode_all(), e.mlp1.decode_all(), "mlp1" + at);
    expect_same(g.mlp2.decode_all(), e.mlp2.decode_all(), "mlp2" + at);
    expect_same(g.mlp1_bias, e.mlp1_bias, "mlp1 bias" + at);
    expect_same(g.sinks, e.sinks, "sinks" + at);
  }

  cpu::CpuEngine engine(gguf);
  GoldenRefs refs(*goldens);
  for (const auto& prompt : golden_prompts()) {
    const auto errors = compare_with_goldens(engine, refs, prompt);
    std::printf("%s\n", describe("gguf-q8_0 " + prompt, errors).c_str());
    EXPECT_LE(errors.logits_last, 1.0f) << prompt;
    EXPECT_LE(errors.lse, 0.1f) << prompt;
  }
}

}  // namespace
}  // namespace gptoss::test

// Model specs: load_model("synth:NAME") is the synthesized preset, generated as it is read.
#include <gtest/gtest.h>

#include <stdexcept>

#include "convert/model_io.h"
#include "convert/synth_spec.h"
#include "convert/synthesize.h"
#include "tests/test_support.h"
#include "verify/canonical_digest.h"

namespace gptoss::test {
namespace {

TEST(SynthSpec, PresetAEqualsTheWrittenCheckpointTensorForTensor) {
  const auto from_spec = canonical_digests(load_model("synth:a"));
  const auto written = canonical_digests(load_model(preset_a_checkpoint() / "hf"));
  ASSERT_EQ(from_spec.size(), written.size());
  ASSERT_EQ(from_spec.size(), 79u);
  for (size_t i = 0; i < written.size(); ++i) {
    EXPECT_EQ(from_spec[i].name, written[i].name);
    EXPECT_EQ(from_spec[i].sha256, written[i].sha256) << written[i].name;
  }
  EXPECT_EQ(model_digest(from_spec), model_digest(written));
}

TEST(SynthSpec, DetectedAsSynthesizedAndNeverAnOutput) {
  EXPECT_EQ(detect_input_format("synth:20b"), ModelFormat::Synthesized);
  EXPECT_EQ(format_name(ModelFormat::Synthesized), "synthesized");
  EXPECT_EQ(output_format_for("synth:a"), ModelFormat::Synthesized);
  EXPECT_THROW(check_write_options(ModelFormat::Synthesized, {}), std::invalid_argument);
  EXPECT_FALSE(is_synth_spec("./synth:a"));  // how a file of that name is reached
  EXPECT_EQ(synth_spec_names(), (std::vector<std::string>{"synth:a", "synth:20b", "synth:120b"}));
}

// Loading is lazy: the 65 GB model is its config and one generator per tensor.
TEST(SynthSpec, LargePresetsHaveTheirShapesAndNoTokenizer) {
  for (const auto& [spec, layers, experts] : {std::tuple{"synth:20b", 24u, 32u}, std::tuple{"synth:120b", 36u, 128u}}) {
    const auto model = load_model(spec);
    EXPECT_EQ(model.config.num_layers, layers) << spec;
    EXPECT_EQ(model.config.num_experts, experts) << spec;
    EXPECT_EQ(model.tensors.size(), 3u + 19u * layers) << spec;
    EXPECT_EQ(model.tokenizer, nullptr) << spec;
    EXPECT_NE(model.source_description.find(spec), std::string::npos) << model.source_description;
  }
}

// Large reads are split over threads; the bytes are the generator's, wherever a read starts.
TEST(SynthSpec, ParallelReadsGiveTheGeneratorsBytes) {
  const auto spec = load_model("synth:20b");
  const auto plain = synthesize_model(synth_preset("20b"));
  for (const auto role : {TensorRole::Mlp1Blocks, TensorRole::Embedding}) {
    const auto& a = *spec.get(role, role == TensorRole::Embedding ? -1 : 1).source;
    const auto& b = *plain.get(role, role == TensorRole::Embedding ? -1 : 1).source;
    ASSERT_EQ(a.size(), b.size());
    const uint64_t offset = 12345, size = (9u << 20) + 77;
    std::vector<uint8_t> from_spec(size), expected(size);
    a.read(offset, from_spec);
    b.read(offset, expected);
    EXPECT_EQ(from_spec, expected);
    std::vector<uint8_t> tail_spec(1000), tail(1000);  // a small read at the end
    a.read(a.size() - 1000, tail_spec);
    b.read(b.size() - 1000, tail);
    EXPECT_EQ(tail_spec, tail);
  }
}

TEST(SynthSpec, UnknownSpecNamesThePresets) {
  for (const char* spec : {"synth:7b", "synth:", "synth:A"}) {
    try {
      (void)load_model(spec);
      ADD_FAILURE() << spec << " loaded";
    } catch (const std::invalid_argument& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(std::string("\"") + spec + "\""), std::string::npos) << message;
      EXPECT_NE(message.find("synth:a, synth:20b and synth:120b"), std::string::npos) << message;
    }
  }
}

}  // namespace
}  // namespace gptoss::test

// model.bin -> GGUF: the GGUF loads in our reader and holds the same tensors as the HF -> GGUF
// conversion of preset a (embedding and output on the 200014 rows model.bin holds).
#include <gtest/gtest.h>

#include "convert/gguf/gguf_model.h"
#include "convert/modelbin/modelbin_model.h"
#include "convert/safetensors_model.h"
#include "tests/test_support.h"

namespace gptoss::test {
namespace {

TEST(ModelBinGguf, ModelBinToGgufMatchesHfToGgufTensorForTensor) {
  GOLDENS_OR_SKIP();
  TOKENIZER_OR_SKIP();
  TempDir out;
  write_gguf_model(load_modelbin_model(*goldens / "a" / "model.bin"), out / "from-bin.gguf", {});
  write_gguf_model(load_safetensors_model(preset_a_checkpoint() / "hf"), out / "from-hf.gguf", {});
  const auto from_bin = load_gguf_model(out / "from-bin.gguf");
  const auto from_hf = load_gguf_model(out / "from-hf.gguf");
  EXPECT_EQ(from_bin.config.vocab_size, 200014u);
  ASSERT_EQ(from_bin.tensors.size(), from_hf.tensors.size());
  for (const auto& t : from_bin.tensors) {
    const CanonicalTensor* ref = from_hf.find(t.spec.name);
    ASSERT_NE(ref, nullptr) << t.spec.name;
    ASSERT_EQ(t.dtype, ref->dtype) << t.spec.name;
    auto got = read_all(*t.source);
    auto want = read_all(*ref->source);
    if (t.spec.role == TensorRole::Embedding || t.spec.role == TensorRole::Unembedding)
      want.resize(got.size());  // rows 0..200013 lead both
    ASSERT_EQ(got.size(), want.size()) << t.spec.name;
    EXPECT_TRUE(got == want) << t.spec.name << " differs";
  }
  EXPECT_EQ(from_bin.config.rope_theta, from_hf.config.rope_theta);
  EXPECT_EQ(from_bin.config.rope_scaling_factor, from_hf.config.rope_scaling_factor);
  EXPECT_EQ(from_bin.config.rope_original_context, from_hf.config.rope_original_context);
}

}  // namespace
}  // namespace gptoss::test

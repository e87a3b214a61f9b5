// model.bin inputs the fuzzer (fuzz/fuzz_modelbin.cpp) crashed on, reduced to the header field.
#include <gtest/gtest.h>

#include <bit>
#include <string>

#include "convert/modelbin/modelbin_config.h"
#include "formats/core/error.h"

namespace gptoss {
namespace {

GptOssConfig modelbin_shaped_config() {
  GptOssConfig c;
  c.num_layers = 2;
  c.hidden_size = 64;
  c.intermediate_size = 32;
  c.num_heads = 1;
  c.num_kv_heads = 1;
  c.head_dim = 64;
  c.num_experts = 4;
  c.experts_per_token = 4;
  c.vocab_size = 272;
  c.sliding_window = 16;
  c.sliding_layers = {true, false};
  return c;
}

// interpolation_scale = 1.67e-38 (bytes 00 00 b6 00) means a YaRN factor of 6e37: the check that
// original_context * factor gives back context_length cast ~6e37 to uint32 (undefined behaviour,
// UBSan: "outside the range of representable values"). Now it is a note, computed in double.
TEST(ModelBinFuzzRegression, TinyInterpolationScaleDoesNotOverflowTheContextCheck) {
  std::vector<std::string> notes;
  modelbin::ModelHeader header = modelbin_header_from_config(modelbin_shaped_config(), notes);
  header.interpolation_scale = std::bit_cast<float>(0x00b60000u);
  notes.clear();
  try {
    const GptOssConfig c = config_from_modelbin_header(header, 272, "tiny-scale.bin", notes);
    EXPECT_GT(c.rope_scaling_factor, 1e37);
    bool noted = false;
    for (const auto& n : notes) noted |= n.find("is not an integer original context") != std::string::npos;
    EXPECT_TRUE(noted);
  } catch (const FormatError& e) {
    EXPECT_EQ(e.file(), "tiny-scale.bin");  // refusing the header is as good as noting it
  }
}

}  // namespace
}  // namespace gptoss

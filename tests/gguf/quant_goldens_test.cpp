// The goldens of data/quant-goldens (made by scripts/make_quant_goldens.sh from llama.cpp's own
// llama-quantize): the GGUF reader reports every tensor's type, our decoders give ggml's f32
// values bit for bit (SHA-256 of each tensor's decoded bytes against llama.cpp's own
// dequantization), and the GGUF model reader takes the mixed file.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "convert/gguf/gguf_model.h"
#include "formats/codecs/float_codec.h"
#include "formats/core/float16.h"
#include "formats/gguf/gguf_file.h"
#include "tests/test_support.h"
#include "verify/checksums.h"
#include "verify/sha256.h"

namespace gptoss::test {
namespace {

std::filesystem::path goldens() { return std::filesystem::path(GPTOSS_DATA_DIR) / "quant-goldens"; }

// The type scripts/make_quant_goldens.sh gives each dense matrix; the experts are MXFP4 and the
// other tensors F32.
const std::map<std::string, DType>& expected_types() {
  static const std::map<std::string, DType> types = {
      {"token_embd.weight", DType::Q4_K},         {"output.weight", DType::Q6_K},
      {"blk.0.attn_q.weight", DType::Q2_K},       {"blk.0.attn_k.weight", DType::Q3_K},
      {"blk.0.attn_v.weight", DType::Q5_K},       {"blk.0.attn_output.weight", DType::Q4_0},
      {"blk.1.attn_q.weight", DType::IQ4_XS},     {"blk.1.attn_k.weight", DType::IQ3_S},
      {"blk.1.attn_v.weight", DType::IQ3_XXS},    {"blk.1.attn_output.weight", DType::Q4_1},
      {"blk.2.attn_q.weight", DType::IQ2_S},      {"blk.2.attn_k.weight", DType::IQ2_XS},
      {"blk.2.attn_v.weight", DType::IQ2_XXS},    {"blk.2.attn_output.weight", DType::Q5_0},
      {"blk.3.attn_q.weight", DType::IQ1_S},      {"blk.3.attn_k.weight", DType::IQ1_M},
      {"blk.3.attn_v.weight", DType::IQ4_NL},     {"blk.3.attn_output.weight", DType::Q5_1},
  };
  return types;
}

DType expected_type(const std::string& name) {
  if (auto it = expected_types().find(name); it != expected_types().end()) return it->second;
  return name.find("_exps.weight") != std::string::npos ? DType::MXFP4 : DType::F32;
}

TEST(QuantGoldens, ReaderReportsEveryTensorsType) {
  const GgufFile f = GgufFile::open(goldens() / "mixed.gguf");
  std::set<DType> seen;
  for (const auto& t : f.tensors()) {
    EXPECT_EQ(dtype_name(t.dtype), dtype_name(expected_type(t.name))) << t.name;
    EXPECT_EQ(t.ggml_type, static_cast<uint32_t>(dtype_info(t.dtype).ggml_type)) << t.name;
    EXPECT_EQ(t.size, dtype_byte_size(t.dtype, t.elements())) << t.name;
    seen.insert(t.dtype);
  }
  for (const auto& [name, type] : expected_types()) EXPECT_TRUE(seen.count(type)) << dtype_name(type) << " missing";
  EXPECT_EQ(seen.size(), expected_types().size() + 2);  // + MXFP4 experts and F32
}

TEST(QuantGoldens, DecodingIsBitIdenticalToGgml) {
  const GgufFile f = GgufFile::open(goldens() / "mixed.gguf");
  std::map<std::string, std::string> expected;
  const auto manifest = goldens() / "reference-f32.sha256";
  const std::vector<uint8_t> text = read_file_bytes(manifest);
  for (const auto& item : parse_manifest(std::string(text.begin(), text.end()), manifest.string())) {
    const auto colon = item.label.find(':');
    if (colon != std::string::npos) expected[item.label.substr(colon + 1)] = item.sha256;
  }
  ASSERT_EQ(expected.size(), f.tensors().size());
  std::set<DType> checked;
  for (const auto& t : f.tensors()) {
    const auto bytes = f.data(t);
    std::vector<float> values(t.elements());
    decode_to_f32(t.dtype, bytes.data(), values.size(), values.data());
    const std::string ours = sha256_hex({reinterpret_cast<const uint8_t*>(values.data()), values.size() * 4});
    ASSERT_TRUE(expected.count(t.name)) << t.name;
    EXPECT_EQ(ours, expected[t.name]) << t.name << " (" << dtype_name(t.dtype) << "): first values " << values[0] << " "
                                      << values[1] << " " << values[2] << " " << values[3];
    checked.insert(t.dtype);
  }
  for (const auto& [name, type] : expected_types()) EXPECT_TRUE(checked.count(type)) << dtype_name(type);
  EXPECT_TRUE(checked.count(DType::MXFP4));
}

TEST(QuantGoldens, ModelReaderKeepsTheDenseEncodings) {
  const CanonicalModel model = load_gguf_model(goldens() / "mixed.gguf");
  size_t quantized = 0;
  for (const auto& t : model.tensors) {
    if (is_mxfp4_role(t.spec.role)) continue;
    if (dtype_info(t.dtype).block_elements > 1) ++quantized;
  }
  EXPECT_EQ(quantized, expected_types().size());
  EXPECT_EQ(model.find("embedding.weight")->dtype, DType::Q4_K);
  EXPECT_EQ(model.find("unembedding.weight")->dtype, DType::Q6_K);
  bool noted = false;
  for (const auto& n : model.notes) noted |= n.find("IQ1_M") != std::string::npos && n.find("lossy") != std::string::npos;
  EXPECT_TRUE(noted) << "the dense quantized types are named in the notes";
}

}  // namespace
}  // namespace gptoss::test

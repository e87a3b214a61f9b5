// `gptoss-convert --mix`: llama-quantize's mixes written in one pass. The files are byte-identical
// to llama.cpp's two passes (convert_hf_to_gguf's BF16 GGUF, then llama-quantize without an
// importance matrix) of the same synthesized models (data/mix-goldens, made by
// scripts/make_mix_goldens.sh); the rules give the published 20b files' type counts; what a mix
// cannot honour is refused.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "convert/gguf/gguf_mix.h"
#include "convert/gguf/gguf_model.h"
#include "convert/model_io.h"
#include "convert/synthesize.h"
#include "formats/gguf/gguf_file.h"
#include "tests/test_support.h"

namespace gptoss::test {
namespace {

using TypeCounts = std::map<std::string, int>;

struct MixGolden {
  std::string shape, mix, sha256;
  TypeCounts counts;
};

struct MixGoldens {
  std::map<std::string, SynthPreset> shapes;
  std::vector<MixGolden> files;
};

// expected.txt: "shape NAME option=value..." (gptoss-synth --preset 20b overrides) and
// "mix SHAPE MIX SHA256 TYPE=COUNT...".
MixGoldens read_goldens() {
  std::ifstream in(data_dir() / "mix-goldens" / "expected.txt");
  MixGoldens g;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string kind, name, word;
    words >> kind >> name;
    if (kind == "shape") {
      SynthPreset p = synth_preset("20b");
      const std::map<std::string, uint32_t*> fields = {
          {"layers", &p.layers}, {"vocab", &p.vocab}, {"hidden", &p.hidden}, {"intermediate", &p.inter},
          {"heads", &p.heads}, {"kv-heads", &p.kv}, {"head-dim", &p.head_dim}, {"experts", &p.experts},
          {"experts-per-token", &p.topk}};
      while (words >> word) {
        const auto eq = word.find('=');
        const auto field = fields.find(word.substr(0, eq));
        EXPECT_NE(field, fields.end()) << word;
        if (field != fields.end()) *field->second = static_cast<uint32_t>(std::stoul(word.substr(eq + 1)));
      }
      g.shapes[name] = p;
    } else if (kind == "mix") {
      MixGolden f{name, "", "", {}};
      words >> f.mix >> f.sha256;
      while (words >> word) f.counts[word.substr(0, word.find('='))] = std::stoi(word.substr(word.find('=') + 1));
      g.files.push_back(f);
    }
  }
  return g;
}

TypeCounts type_counts(const std::filesystem::path& gguf) {
  TypeCounts counts;
  const GgufFile file = GgufFile::open(gguf);
  for (const auto& t : file.tensors()) ++counts[std::string(dtype_name(t.dtype))];
  return counts;
}

TEST(GgufMix, FilesAreByteIdenticalToLlamaQuantizeOfTheConvertersGguf) {
  const MixGoldens goldens = read_goldens();
  ASSERT_EQ(goldens.shapes.size(), 2u);
  ASSERT_EQ(goldens.files.size(), 10u);  // five mixes of each shape
  TempDir tmp;
  std::map<std::string, CanonicalModel> models;
  for (const auto& [name, preset] : goldens.shapes) models.emplace(name, synthesize_model(preset));
  for (const MixGolden& f : goldens.files) {
    SCOPED_TRACE(f.shape + " " + f.mix);
    GgufWriteOptions options;
    options.mix = gguf_mix_from_name(f.mix);
    ASSERT_TRUE(options.mix);
    const auto path = tmp / (f.shape + "-" + f.mix + ".gguf");
    write_gguf_model(models.at(f.shape), path, options);
    EXPECT_EQ(type_counts(path), f.counts);
    EXPECT_EQ(file_sha256(path), f.sha256);
  }
}

// The dense matrices' types for gpt-oss-20b (24 layers, rows of 2880, attn_output rows of 4096,
// 32 experts): the counts of unsloth's Q4_K_M (q5_0 61, q8_0 13, q4_K 24) and ggml-org's MXFP4
// file (q8_0 98); with the F32 vectors and router (289) and MXFP4 experts (72) they are the
// files' load logs.
TEST(GgufMix, RulesGiveThePublished20bTypeCounts) {
  const GptOssConfig c = synth_config(synth_preset("20b"));
  ASSERT_EQ(c.num_layers, 24u);
  auto counts = [&](GgufMix mix) {
    TypeCounts n;
    for (const auto& spec : canonical_tensor_specs(c))
      if (is_matrix_role(spec.role) && spec.role != TensorRole::RouterWeight)
        ++n[std::string(dtype_name(gguf_mix_type(mix, spec.role, spec.layer, c.num_layers, c.num_experts, spec.shape.back())))];
    return n;
  };
  EXPECT_EQ(counts(GgufMix::Q4_K_M), (TypeCounts{{"Q5_0", 61}, {"Q8_0", 13}, {"Q4_K", 24}}));
  EXPECT_EQ(counts(GgufMix::MXFP4), (TypeCounts{{"Q8_0", 98}}));
  EXPECT_EQ(counts(GgufMix::Q5_K_M), (TypeCounts{{"Q5_1", 61}, {"Q8_0", 13}, {"Q5_K", 24}}));
  EXPECT_EQ(counts(GgufMix::Q6_K), (TypeCounts{{"Q8_0", 74}, {"Q6_K", 24}}));
  EXPECT_EQ(counts(GgufMix::Q8_0), (TypeCounts{{"Q8_0", 98}}));
}

TEST(GgufMix, MoreBitsLayersAndFallbacks) {
  std::vector<int> picked;
  for (int l = 0; l < 24; ++l)
    if (gguf_mix_uses_more_bits(l, 24)) picked.push_back(l);
  EXPECT_EQ(picked, (std::vector<int>{0, 1, 2, 5, 8, 11, 14, 17, 20, 21, 22, 23}));
  EXPECT_EQ(gguf_mix_type(GgufMix::Q4_K_M, TensorRole::AttnQ, 0, 24, 32, 2880), DType::Q5_0);
  EXPECT_EQ(gguf_mix_type(GgufMix::Q5_K_M, TensorRole::AttnQ, 0, 24, 32, 2880), DType::Q5_1);
  EXPECT_EQ(gguf_mix_type(GgufMix::Q6_K, TensorRole::AttnQ, 0, 24, 32, 2880), DType::Q8_0);
  EXPECT_EQ(gguf_mix_type(GgufMix::Q4_K_M, TensorRole::AttnOut, 0, 24, 32, 4096), DType::Q4_K);
  EXPECT_EQ(gguf_mix_type(GgufMix::Q4_K_M, TensorRole::Unembedding, -1, 24, 32, 4096), DType::Q6_K);
  EXPECT_EQ(gguf_mix_type(GgufMix::Q4_K_M, TensorRole::AttnQ, 0, 24, 32, 48), DType::F16);  // not even 32s
  EXPECT_THROW(gguf_mix_type(GgufMix::Q8_0, TensorRole::AttnQ, 0, 24, 32, 48), std::invalid_argument);
  // 8 experts (Mixtral's rule): attn_k and attn_v in Q8_0, a Q4_K_M's attn_output in Q5_K.
  EXPECT_EQ(gguf_mix_type(GgufMix::Q4_K_M, TensorRole::AttnK, 1, 24, 8, 4096), DType::Q8_0);
  EXPECT_EQ(gguf_mix_type(GgufMix::Q4_K_M, TensorRole::AttnOut, 1, 24, 8, 4096), DType::Q5_K);
  EXPECT_EQ(gguf_mix_from_name("Q4_K_M"), GgufMix::Q4_K_M);
  EXPECT_EQ(gguf_mix_from_name("MXFP4_MOE"), GgufMix::MXFP4);
  EXPECT_FALSE(gguf_mix_from_name("q4_k_s"));
}

TEST(GgufMix, WhatCannotBeHonouredIsRefused) {
  WriteOptions options;
  options.mix = GgufMix::Q4_K_M;
  EXPECT_THROW(check_write_options(ModelFormat::Safetensors, options), std::invalid_argument);
  EXPECT_THROW(check_write_options(ModelFormat::ModelBin, options), std::invalid_argument);
  options.dense_dtype = DType::Q8_0;
  EXPECT_THROW(check_write_options(ModelFormat::Gguf, options), std::invalid_argument);
  options.dense_dtype = DType::F32;
  EXPECT_NO_THROW(check_write_options(ModelFormat::Gguf, options));

  // A model whose dense matrices are already quantized: the message names the tensor and why.
  TempDir tmp;
  SynthPreset p = synth_preset("20b");
  p.layers = 1, p.vocab = 64, p.hidden = 256, p.inter = 64, p.heads = 4, p.kv = 1, p.head_dim = 64, p.experts = 2, p.topk = 1;
  GgufWriteOptions q8;
  q8.dense_dtype = DType::Q8_0;
  write_gguf_model(synthesize_model(p), tmp / "q8.gguf", q8);
  GgufWriteOptions mix;
  mix.mix = GgufMix::Q4_K_M;
  try {
    write_gguf_model(load_model(tmp / "q8.gguf"), tmp / "mix.gguf", mix);
    ADD_FAILURE() << "a Q8_0 GGUF was quantized again";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("already quantized (Q8_0)"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(tmp / "mix.gguf"));
}

}  // namespace
}  // namespace gptoss::test

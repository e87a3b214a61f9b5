// Our GGUF against llama.cpp's converter on the golden preset-a checkpoint (refs-a.json gguf.*):
// every tensor's type, ne and data sha256, the tensor order, and every metadata key with its
// types and value. Then the reverse direction and round trips.
#include <bit>
#include <fstream>

#include <nlohmann/json.hpp>

#include "convert/gguf/gguf_model.h"
#include "convert/gguf/gguf_tokenizer.h"
#include "convert/safetensors_model.h"
#include "convert/tokenizer_json.h"
#include "formats/gguf/gguf_file.h"
#include "tests/test_support.h"
#include "verify/sha256.h"

namespace gptoss::test {
namespace {
namespace fs = std::filesystem;

nlohmann::ordered_json load_refs(const fs::path& goldens) {
  std::ifstream in(goldens / "a" / "refs-a.json");
  return nlohmann::ordered_json::parse(in);
}

// Compares one of our GGUF files with refs-a.json's description of llama.cpp's output.
void expect_matches_reference(const GgufFile& ours, const nlohmann::ordered_json& ref) {
  // Tensors: order, type, ne, data hash.
  std::vector<std::string> order;
  for (const auto& t : ours.tensors()) order.push_back(t.name);
  EXPECT_EQ(order, ref["tensor_order"].get<std::vector<std::string>>());
  for (const auto& t : ours.tensors()) {
    SCOPED_TRACE(t.name);
    ASSERT_TRUE(ref["tensors"].contains(t.name));
    const auto& r = ref["tensors"][t.name];
    EXPECT_EQ(t.ggml_type, r["type"].get<uint32_t>());
    EXPECT_EQ(t.ne, r["ne"].get<std::vector<uint64_t>>());
    EXPECT_EQ(sha256_hex(ours.data(t)), r["sha256"].get<std::string>());
  }
  // Metadata: same keys in the same order, same types, same values (name strings may differ).
  const auto& kv = ref["kv"];
  EXPECT_EQ(ours.version(), kv["GGUF.version"]["value"].get<uint32_t>());
  EXPECT_EQ(ours.tensors().size(), kv["GGUF.tensor_count"]["value"].get<uint64_t>());
  EXPECT_EQ(ours.kvs().size(), kv["GGUF.kv_count"]["value"].get<uint64_t>());
  std::vector<std::string> ref_keys;
  for (auto it = kv.begin(); it != kv.end(); ++it)
    if (it.key().rfind("GGUF.", 0) != 0) ref_keys.push_back(it.key());
  std::vector<std::string> our_keys;
  for (const auto& k : ours.kvs()) our_keys.push_back(k.key);
  EXPECT_EQ(our_keys, ref_keys);
  for (const auto& k : ours.kvs()) {
    SCOPED_TRACE(k.key);
    ASSERT_TRUE(kv.contains(k.key));
    const auto& r = kv[k.key];
    const auto types = r["types"].get<std::vector<uint32_t>>();
    ASSERT_GE(types.size(), 1u);
    EXPECT_EQ(static_cast<uint32_t>(k.value.type), types[0]);
    if (k.value.type == GgufType::Array) {
      ASSERT_EQ(types.size(), 2u);
      EXPECT_EQ(static_cast<uint32_t>(k.value.element_type), types[1]);
      EXPECT_EQ(k.value.count, r["count"].get<uint64_t>());
      continue;
    }
    if (k.key == "general.name" || k.key == "general.size_label") continue;
    if (k.value.type == GgufType::String) {
      EXPECT_EQ(std::string(k.value.string), r["value"].get<std::string>());
    } else if (k.value.type == GgufType::F32) {
      // refs-a.json prints the f32 widened to double: compare the f32 bits.
      EXPECT_EQ(std::bit_cast<float>(static_cast<uint32_t>(k.value.bits)), static_cast<float>(r["value"].get<double>()));
    } else {
      EXPECT_EQ(*k.value.as_number(), r["value"].get<double>());
    }
  }
}

class GgufGolden : public ::testing::TestWithParam<const char*> {};

TEST_P(GgufGolden, PresetAMatchesLlamaCppConverter) {
  GOLDENS_OR_SKIP();
  TOKENIZER_OR_SKIP();
  const std::string dense = GetParam();
  const auto refs = load_refs(*goldens);
  TempDir tmp;
  const CanonicalModel model = load_safetensors_model(preset_a_checkpoint() / "hf");
  ASSERT_TRUE(model.tokenizer);
  GgufWriteOptions options;
  options.dense_dtype = dense == "q8_0" ? DType::Q8_0 : DType::BF16;
  write_gguf_model(model, tmp / "a.gguf", options);
  const GgufFile ours = GgufFile::open(tmp / "a.gguf");
  expect_matches_reference(ours, refs["gguf"][dense]);
  EXPECT_EQ(std::string(ours.require("general.size_label", GgufType::String).string), "8x26M");
  // With llama.cpp's name for the model (it names it after the folder, "hf") the whole file is
  // the converter's file, byte for byte.
  options.name = "Hf";
  write_gguf_model(model, tmp / "named.gguf", options);
  EXPECT_EQ(file_sha256(tmp / "named.gguf"), refs["gguf"][dense]["sha256"].get<std::string>());
  EXPECT_EQ(fs::file_size(tmp / "named.gguf"), refs["gguf"][dense]["size"].get<uint64_t>());
}

INSTANTIATE_TEST_SUITE_P(DenseTypes, GgufGolden, ::testing::Values("q8_0", "bf16"));

TEST(GgufGolden, TokenizerArraysEqualTheGoldenFileElementByElement) {
  GOLDENS_OR_SKIP();
  TOKENIZER_OR_SKIP();
  const GgufFile golden = GgufFile::open(*goldens / "a" / "model-q8_0.gguf");
  const CanonicalModel model = load_safetensors_model(preset_a_checkpoint() / "hf");
  ASSERT_TRUE(model.tokenizer);
  const GgufVocab vocab = gguf_vocab(*model.tokenizer, model.config.vocab_size);
  const GgufValue& tokens = golden.require("tokenizer.ggml.tokens", GgufType::Array);
  const GgufValue& types = golden.require("tokenizer.ggml.token_type", GgufType::Array);
  ASSERT_EQ(tokens.count, vocab.tokens.size());
  ASSERT_EQ(types.count, vocab.types.size());
  uint64_t token_diffs = 0, type_diffs = 0;
  std::map<int32_t, uint64_t> type_counts;
  for (uint64_t i = 0; i < tokens.count; ++i) {
    if (tokens.strings[i] != vocab.tokens[i] && token_diffs++ < 5)
      ADD_FAILURE() << "token " << i << ": golden \"" << tokens.strings[i] << "\" ours \"" << vocab.tokens[i] << "\"";
    const auto golden_type = static_cast<int32_t>(types.element_bits(i));
    ++type_counts[golden_type];
    if (golden_type != vocab.types[i] && type_diffs++ < 5)
      ADD_FAILURE() << "token " << i << ": golden type " << golden_type << " ours " << vocab.types[i];
  }
  EXPECT_EQ(token_diffs, 0u);
  EXPECT_EQ(type_diffs, 0u);
  // 199998 BPE tokens, 21 added specials (all CONTROL), the rest [PAD{i}] UNUSED.
  EXPECT_EQ(type_counts[1], 199998u);
  EXPECT_EQ(type_counts[3], 21u);
  EXPECT_EQ(type_counts[5], 201088u - 199998u - 21u);

  // Merges and special ids too.
  const GgufValue& merges = golden.require("tokenizer.ggml.merges", GgufType::Array);
  ASSERT_EQ(merges.count, model.tokenizer->merges.size());
  GgufMetadata md;
  add_gguf_tokenizer(md, *model.tokenizer, model.config.vocab_size);
  uint64_t merge_diffs = 0;
  for (uint64_t i = 0; i < merges.count; ++i) {
    const auto& [l, r] = model.tokenizer->merges[i];
    if (merges.strings[i] != bytes_to_gpt2_unicode(l) + " " + bytes_to_gpt2_unicode(r)) ++merge_diffs;
  }
  EXPECT_EQ(merge_diffs, 0u);

  // Reading the golden tokenizer back gives the tokenizer.json data (raw bytes, types, merges).
  const auto back = gguf_tokenizer(golden);
  ASSERT_TRUE(back);
  ASSERT_EQ(back->size(), 201088u);
  for (uint32_t id = 0; id < 199998 + 21; ++id) {
    ASSERT_EQ(back->tokens[id], model.tokenizer->tokens[id]) << id;
    ASSERT_EQ(back->types[id], model.tokenizer->types[id]) << id;
  }
  EXPECT_EQ(back->merges, model.tokenizer->merges);
  EXPECT_EQ(back->bos_id, 199998u);
  EXPECT_EQ(back->eos_id, 200002u);
  EXPECT_EQ(back->pad_id, 199999u);
  EXPECT_EQ(back->pretokenizer_regex, model.tokenizer->pretokenizer_regex);
}

TEST(GgufGolden, ReadingTheGoldenFileGivesThePresetAConfig) {
  GOLDENS_OR_SKIP();
  const CanonicalModel g = load_gguf_model(*goldens / "a" / "model-q8_0.gguf");
  const CanonicalModel hf = load_safetensors_model(preset_a_checkpoint() / "hf");
  GptOssConfig expected = hf.config;
  EXPECT_EQ(g.config.num_layers, 4u);
  EXPECT_EQ(g.config.rms_norm_eps, 1e-5);  // the f32 in the file reads back as the config's decimal
  EXPECT_EQ(g.config.sliding_layers, (std::vector<bool>{true, false, true, false}));
  // Everything the config says survives GGUF (special ids come from the tokenizer keys).
  expected.bos_token_id = g.config.bos_token_id;
  expected.eos_token_id = g.config.eos_token_id;
  expected.pad_token_id = g.config.pad_token_id;
  EXPECT_EQ(g.config, expected);
  // Experts come back exactly as the checkpoint's MXFP4 pair; norms, biases, sinks, router exactly
  // (F32 holding the bf16 values); every dense matrix within Q8_0 rounding.
  for (const auto& t : g.tensors) {
    SCOPED_TRACE(t.spec.name);
    const CanonicalTensor* h = hf.find(t.spec.name);
    ASSERT_TRUE(h);
    if (is_mxfp4_role(t.spec.role)) {
      EXPECT_EQ(read_all(*t.source), read_all(*h->source));
    } else if (t.dtype == DType::F32) {
      std::vector<uint8_t> a = read_all(*t.source), b = read_all(*h->source);
      ASSERT_EQ(a.size(), 2 * b.size());
      for (size_t i = 0; i < b.size() / 2; ++i) {
        ASSERT_EQ(a[4 * i + 2], b[2 * i]);
        ASSERT_EQ(a[4 * i + 3], b[2 * i + 1]);
        ASSERT_EQ(a[4 * i], 0);
        ASSERT_EQ(a[4 * i + 1], 0);
      }
    } else {
      EXPECT_EQ(t.dtype, DType::Q8_0);
    }
  }
}

TEST(GgufGolden, GoldenFileWrittenBackAsQ8_0ReproducesEveryTensor) {
  GOLDENS_OR_SKIP();
  const auto refs = load_refs(*goldens);
  TempDir tmp;
  const CanonicalModel g = load_gguf_model(*goldens / "a" / "model-q8_0.gguf");
  GgufWriteOptions options;
  options.dense_dtype = DType::Q8_0;
  write_gguf_model(g, tmp / "back.gguf", options);
  expect_matches_reference(GgufFile::open(tmp / "back.gguf"), refs["gguf"]["q8_0"]);
}

// Tensor data of every tensor, by name.
std::map<std::string, std::string> tensor_hashes(const fs::path& path) {
  const GgufFile f = GgufFile::open(path);
  std::map<std::string, std::string> out;
  for (const auto& t : f.tensors()) out[t.name] = std::to_string(t.ggml_type) + ":" + sha256_hex(f.data(t));
  return out;
}

TEST(GgufRoundTrip, GgufToHfToGgufIsByteIdenticalInTensorData) {
  GOLDENS_OR_SKIP();
  TempDir tmp;
  // BF16 dense: GGUF -> HF (BF16) -> GGUF (BF16) is lossless.
  const CanonicalModel hf = load_safetensors_model(preset_a_checkpoint() / "hf");
  GgufWriteOptions bf16;
  write_gguf_model(hf, tmp / "a-bf16.gguf", bf16);
  const CanonicalModel from_gguf = load_gguf_model(tmp / "a-bf16.gguf");
  SafetensorsWriteOptions st;
  const auto notes = write_safetensors_model(from_gguf, tmp / "hf-back", st);
  EXPECT_TRUE(notes.empty());
  // The HF checkpoint we wrote holds the original checkpoint's bytes.
  const CanonicalModel hf_back = load_safetensors_model(tmp / "hf-back");
  for (const auto& t : hf.tensors) EXPECT_EQ(read_all(*t.source), read_all(*hf_back.find(t.spec.name)->source)) << t.spec.name;
  write_gguf_model(hf_back, tmp / "a-bf16-again.gguf", bf16);
  EXPECT_EQ(tensor_hashes(tmp / "a-bf16.gguf"), tensor_hashes(tmp / "a-bf16-again.gguf"));

  // The golden Q8_0 file through an F32 HF checkpoint: dequantizing is exact and Q8_0 of the
  // dequantized values gives the same blocks back.
  const CanonicalModel golden = load_gguf_model(*goldens / "a" / "model-q8_0.gguf");
  SafetensorsWriteOptions f32;
  f32.dense_dtype = DType::F32;
  EXPECT_TRUE(write_safetensors_model(golden, tmp / "hf-f32", f32).empty());
  GgufWriteOptions q8;
  q8.dense_dtype = DType::Q8_0;
  write_gguf_model(load_safetensors_model(tmp / "hf-f32"), tmp / "q8-again.gguf", q8);
  EXPECT_EQ(tensor_hashes(*goldens / "a" / "model-q8_0.gguf"), tensor_hashes(tmp / "q8-again.gguf"));
}

TEST(GgufRoundTrip, Q8_0ToBf16HfIsLossyAndSaysSo) {
  GOLDENS_OR_SKIP();
  TempDir tmp;
  const CanonicalModel golden = load_gguf_model(*goldens / "a" / "model-q8_0.gguf");
  bool warned = false;
  for (const auto& n : golden.notes) warned |= n.find("Q8_0") != std::string::npos;
  EXPECT_TRUE(warned);
  SafetensorsWriteOptions st;
  const auto notes = write_safetensors_model(golden, tmp / "hf", st);
  ASSERT_FALSE(notes.empty());
  for (const auto& n : notes) {
    std::cout << "[ note ] " << n << "\n";
    EXPECT_NE(n.find("Q8_0 -> BF16"), std::string::npos) << n;
  }
}

TEST(GgufSplit, SplitSetReadsAsOneModelWithTheSameTensors) {
  GOLDENS_OR_SKIP();
  TempDir tmp;
  const CanonicalModel hf = load_safetensors_model(preset_a_checkpoint() / "hf");
  GgufWriteOptions whole;
  write_gguf_model(hf, tmp / "one.gguf", whole);
  GgufWriteOptions split;
  split.split_max_bytes = 8u << 20;
  write_gguf_model(hf, tmp / "many.gguf", split);
  std::vector<fs::path> shards;
  for (const auto& e : fs::directory_iterator(tmp.path()))
    if (e.path().filename().string().rfind("many-", 0) == 0) shards.push_back(e.path());
  std::sort(shards.begin(), shards.end());
  ASSERT_GE(shards.size(), 3u);
  EXPECT_EQ(shards.front().filename().string(), "many-00001-of-0000" + std::to_string(shards.size()) + ".gguf");
  const GgufFile second = GgufFile::open(shards[1]);
  EXPECT_EQ(second.require("split.no", GgufType::U16).bits, 1u);
  EXPECT_EQ(second.require("split.count", GgufType::U16).bits, shards.size());
  EXPECT_EQ(second.require("split.tensors.count", GgufType::I32).bits, 79u);
  EXPECT_EQ(second.find("general.architecture"), nullptr);  // metadata only in the first shard
  uint64_t tensors = 0;
  std::map<std::string, std::string> hashes;
  for (const auto& s : shards) {
    tensors += GgufFile::open(s).tensors().size();
    for (auto& [k, v] : tensor_hashes(s)) hashes[k] = v;
  }
  EXPECT_EQ(tensors, 79u);
  EXPECT_EQ(hashes, tensor_hashes(tmp / "one.gguf"));
  // Opening any shard reads the whole model, same bytes as the single file.
  const CanonicalModel a = load_gguf_model(shards[1]);
  const CanonicalModel b = load_gguf_model(tmp / "one.gguf");
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) EXPECT_EQ(read_all(*a.tensors[i].source), read_all(*b.tensors[i].source));
  EXPECT_EQ(a.config, b.config);
}

}  // namespace
}  // namespace gptoss::test

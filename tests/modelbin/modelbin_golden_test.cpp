// model.bin against OpenAI's create-local-model.py output for preset a (shared/goldens/a/model.bin),
// from both checkpoint layouts, and back to the canonical model.
#include <gtest/gtest.h>

#include "convert/modelbin/modelbin_model.h"
#include "convert/modelbin/modelbin_tokenizer.h"
#include "convert/safetensors_model.h"
#include "convert/tokenizer_json.h"
#include "formats/modelbin/modelbin_file.h"
#include "tests/test_support.h"

namespace gptoss::test {
namespace {
namespace fs = std::filesystem;

constexpr const char* kGoldenSha = "5e6908f81dcd098a9917d9085d52d22d562e47b7947bafcc2b8a992b40d2ec3a";
constexpr uint64_t kGoldenSize = 54466560;

// Where two files first differ, for a readable failure.
std::string first_difference(const fs::path& a, const fs::path& b) {
  const auto x = read_file_bytes(a), y = read_file_bytes(b);
  const size_t n = std::min(x.size(), y.size());
  for (size_t i = 0; i < n; ++i)
    if (x[i] != y[i]) return "first difference at byte " + std::to_string(i);
  return x.size() == y.size() ? "identical" : "sizes differ: " + std::to_string(x.size()) + " vs " + std::to_string(y.size());
}

void expect_golden_bytes(const fs::path& written, const fs::path& golden) {
  EXPECT_EQ(fs::file_size(written), kGoldenSize);
  EXPECT_EQ(file_sha256(written), kGoldenSha) << first_difference(written, golden);
}

TEST(ModelBinGolden, GoldenFileIsTheOneTheReadmeNames) {
  GOLDENS_OR_SKIP();
  EXPECT_EQ(file_sha256(*goldens / "a" / "model.bin"), kGoldenSha);
}

TEST(ModelBinGolden, HfCheckpointWritesTheGoldenByteForByte) {
  GOLDENS_OR_SKIP();
  TOKENIZER_OR_SKIP();
  const auto model = load_safetensors_model(preset_a_checkpoint() / "hf");
  ASSERT_TRUE(model.tokenizer);
  TempDir out;
  const auto notes = write_modelbin_model(model, out / "model.bin", {});
  expect_golden_bytes(out / "model.bin", *goldens / "a" / "model.bin");
  // What is lost is said: rows 200014..201087 of the (un)embedding and the tokenizer's ids above.
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[0].find("tokenizer's 5 tokens above are not stored"), std::string::npos) << notes[0];
  EXPECT_NE(notes[1].find("truncated from 201088 to the 200014 rows"), std::string::npos) << notes[1];
}

TEST(ModelBinGolden, OriginalCheckpointWritesTheGoldenByteForByte) {
  GOLDENS_OR_SKIP();
  TOKENIZER_OR_SKIP();
  auto model = load_safetensors_model(preset_a_checkpoint() / "original");
  model.tokenizer = load_tokenizer_json(*tokenizer_json);  // original/ has no tokenizer.json
  TempDir out;
  write_modelbin_model(model, out / "model.bin", {});
  expect_golden_bytes(out / "model.bin", *goldens / "a" / "model.bin");
}

TEST(ModelBinGolden, ReadingAndRewritingTheGoldenIsTheIdentity) {
  GOLDENS_OR_SKIP();
  const auto model = load_modelbin_model(*goldens / "a" / "model.bin");
  TempDir out;
  write_modelbin_model(model, out / "model.bin", {});
  expect_golden_bytes(out / "model.bin", *goldens / "a" / "model.bin");
}

// Every canonical tensor from the golden model.bin equals the preset-a checkpoint's, bit for bit
// (embedding and unembedding on the 200014 rows the file holds).
void expect_same_tensors(const CanonicalModel& from_bin, const CanonicalModel& reference) {
  ASSERT_EQ(from_bin.tensors.size(), reference.tensors.size());
  for (const auto& t : from_bin.tensors) {
    const CanonicalTensor* ref = reference.find(t.spec.name);
    ASSERT_NE(ref, nullptr) << t.spec.name;
    ASSERT_EQ(t.dtype, ref->dtype) << t.spec.name;
    auto got = read_all(*t.source);
    auto want = read_all(*ref->source);
    if (t.spec.role == TensorRole::Embedding || t.spec.role == TensorRole::Unembedding) {
      ASSERT_EQ(t.spec.shape[0], 200014u);
      want.resize(got.size());
    } else {
      EXPECT_EQ(t.spec.shape, ref->spec.shape) << t.spec.name;
    }
    ASSERT_EQ(got.size(), want.size()) << t.spec.name;
    EXPECT_TRUE(got == want) << t.spec.name << " differs";
  }
}

TEST(ModelBinGolden, GoldenReadsBackToThePresetATensorsBitForBit) {
  GOLDENS_OR_SKIP();
  const auto from_bin = load_modelbin_model(*goldens / "a" / "model.bin");
  const auto reference = load_safetensors_model(preset_a_checkpoint() / "hf");
  expect_same_tensors(from_bin, reference);

  // Config: everything but the vocabulary comes back exactly.
  const auto& c = from_bin.config;
  const auto& r = reference.config;
  EXPECT_EQ(c.vocab_size, 200014u);
  EXPECT_EQ(c.num_layers, r.num_layers);
  EXPECT_EQ(c.hidden_size, r.hidden_size);
  EXPECT_EQ(c.intermediate_size, r.intermediate_size);
  EXPECT_EQ(c.num_heads, r.num_heads);
  EXPECT_EQ(c.num_kv_heads, r.num_kv_heads);
  EXPECT_EQ(c.head_dim, r.head_dim);
  EXPECT_EQ(c.num_experts, r.num_experts);
  EXPECT_EQ(c.experts_per_token, r.experts_per_token);
  EXPECT_EQ(c.sliding_window, r.sliding_window);
  EXPECT_EQ(c.sliding_layers, r.sliding_layers);
  EXPECT_EQ(c.rope_theta, 150000.0);
  EXPECT_EQ(c.rope_scaling_factor, 32.0);
  EXPECT_EQ(c.rope_original_context, 4096u);
  EXPECT_EQ(c.yarn_beta_fast, 32.0);
  EXPECT_EQ(c.yarn_beta_slow, 1.0);
  EXPECT_FALSE(c.yarn_truncate);
  EXPECT_EQ(c.max_position_embeddings, 131072u);
  EXPECT_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_EQ(c.swiglu_limit, 7.0);
  EXPECT_EQ(c.bos_token_id, r.bos_token_id);
  EXPECT_EQ(c.eos_token_id, r.eos_token_id);
  EXPECT_EQ(c.pad_token_id, r.pad_token_id);
  bool vocab_note = false;
  for (const auto& n : from_bin.notes) vocab_note |= n.find("vocab_size is 200014") != std::string::npos;
  EXPECT_TRUE(vocab_note);
}

TEST(ModelBinGolden, ModelBinToHfCheckpointIsLosslessOnTheRowsItHolds) {
  GOLDENS_OR_SKIP();
  TempDir out;
  write_safetensors_model(load_modelbin_model(*goldens / "a" / "model.bin"), out / "hf", {});
  const auto written = load_safetensors_model(out / "hf");
  EXPECT_EQ(written.config.vocab_size, 200014u);
  expect_same_tensors(written, load_safetensors_model(preset_a_checkpoint() / "hf"));
}

TEST(ModelBinGolden, RegexConstantIsTheGoldenRegexAndTheTokenizerJsonOne) {
  GOLDENS_OR_SKIP();
  const auto f = modelbin::ModelBinFile::open(*goldens / "a" / "model.bin");
  EXPECT_EQ(f.regex(), kO200kRegex);
  EXPECT_EQ(f.regex().size(), 274u);
  EXPECT_EQ(f.special_token_uuids(), modelbin_special_token_table());
  TOKENIZER_OR_SKIP();
  EXPECT_EQ(load_tokenizer_json(*tokenizer_json)->pretokenizer_regex, kO200kRegex);
}

TEST(ModelBinGolden, TokenizerFromModelBinMatchesTokenizerJson) {
  GOLDENS_OR_SKIP();
  TOKENIZER_OR_SKIP();
  const auto from_bin = load_modelbin_model(*goldens / "a" / "model.bin").tokenizer;
  const auto json = load_tokenizer_json(*tokenizer_json);
  ASSERT_EQ(from_bin->size(), 200014u);
  for (uint32_t id = 0; id < 200014; ++id) {
    ASSERT_EQ(from_bin->tokens[id], json->tokens[id]) << "id " << id;
    ASSERT_EQ(from_bin->is_special(id), json->is_special(id)) << "id " << id;
  }
  EXPECT_EQ(from_bin->bos_id, json->bos_id);
  EXPECT_EQ(from_bin->eos_id, json->eos_id);
  EXPECT_EQ(from_bin->pad_id, json->pad_id);
  // Merges derived from the ranks are tokenizer.json's merges, in order.
  ASSERT_EQ(from_bin->merges.size(), json->merges.size());
  for (size_t i = 0; i < json->merges.size(); ++i) ASSERT_EQ(from_bin->merges[i], json->merges[i]) << "merge " << i;
}

}  // namespace
}  // namespace gptoss::test

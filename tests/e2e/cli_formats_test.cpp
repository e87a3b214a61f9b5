// End-to-end: gptoss-convert between every pair of formats the issues name, as a user runs it:
// split GGUF sets, the original layout from GGUF and model.bin, the golden model.bin from a
// checkpoint, model.bin's 200014-row vocabulary said out loud, and size suffixes.
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "convert/model_io.h"
#include "formats/gguf/gguf_file.h"
#include "tests/test_support.h"

namespace gptoss::test {
namespace {
namespace fs = std::filesystem;

constexpr const char* kGoldenModelBinSha = "5e6908f81dcd098a9917d9085d52d22d562e47b7947bafcc2b8a992b40d2ec3a";

CommandResult convert(const std::string& args) {
  return run_command((tools_dir() / "gptoss-convert").string() + " -q " + args);
}

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// Same canonical tensors (names, dtypes, bytes) and the same config.
void expect_same_model(const CanonicalModel& a, const CanonicalModel& b) {
  EXPECT_EQ(a.config, b.config);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    ASSERT_EQ(a.tensors[i].spec.name, b.tensors[i].spec.name);
    EXPECT_EQ(a.tensors[i].dtype, b.tensors[i].dtype) << a.tensors[i].spec.name;
    EXPECT_TRUE(read_all(*a.tensors[i].source) == read_all(*b.tensors[i].source)) << a.tensors[i].spec.name;
  }
}

TEST(CliConvertFormats, SplitMaxSizeWritesShardsThatReadBackAsOneModel) {
  TempDir dir;
  const fs::path hf = preset_a_checkpoint() / "hf";
  // 8M = 8,000,000 bytes of tensor data per shard (gguf-split's meaning of M).
  auto r = convert(hf.string() + " " + (dir / "many.gguf").string() + " --split-max-size 8M");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(fs::exists(dir / "many.gguf"));
  std::vector<std::string> shards;
  for (const auto& e : fs::directory_iterator(dir.path()))
    if (e.path().filename().string().rfind("many", 0) == 0) shards.push_back(e.path().filename().string());
  std::sort(shards.begin(), shards.end());
  ASSERT_GE(shards.size(), 3u);
  const std::string count = std::to_string(shards.size());
  uint64_t tensors = 0;
  for (size_t i = 0; i < shards.size(); ++i) {
    const std::string index = std::to_string(i + 1);
    EXPECT_EQ(shards[i], "many-" + std::string(5 - index.size(), '0') + index + "-of-" +
                             std::string(5 - count.size(), '0') + count + ".gguf");
    const GgufFile shard = GgufFile::open(dir / shards[i]);
    uint64_t data = 0;
    for (const auto& t : shard.tensors()) data += t.size;
    // No shard holds more than 8e6 bytes of tensor data unless one tensor alone is larger.
    EXPECT_TRUE(data <= 8'000'000 || shard.tensors().size() == 1) << shards[i] << ": " << data << " bytes";
    tensors += shard.tensors().size();
  }
  EXPECT_EQ(tensors, 79u);
  // Any shard opens the whole set: back to an HF checkpoint byte-identical to the source.
  EXPECT_EQ(load_model(dir / shards[1]).tensors.size(), 79u);
  r = convert((dir / shards.back()).string() + " " + (dir / "back").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(file_sha256(dir / "back" / "model.safetensors"), file_sha256(hf / "model.safetensors"));
}

TEST(CliConvertFormats, GgufToOriginalLayoutIsTheOriginalCheckpoint) {
  TempDir dir;
  const fs::path ck = preset_a_checkpoint();
  auto r = convert((ck / "hf").string() + " " + (dir / "a.gguf").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = convert((dir / "a.gguf").string() + " " + (dir / "orig").string() + " --layout original");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // BF16 dense in, BF16 out: the OpenAI layout file of the synthesizer, byte for byte.
  EXPECT_EQ(file_sha256(dir / "orig" / "model.safetensors"), file_sha256(ck / "original" / "model.safetensors"));
  const auto config = read_json(dir / "orig" / "config.json");
  EXPECT_EQ(config["num_experts"], 8);
  EXPECT_EQ(config["initial_context_length"], 4096);
  EXPECT_FALSE(config.contains("model_type"));
}

TEST(CliConvertFormats, ModelBinToOriginalLayoutKeepsEveryTensor) {
  GOLDENS_OR_SKIP();
  TempDir dir;
  const fs::path bin = *goldens / "a" / "model.bin";
  const auto r = convert(bin.string() + " " + (dir / "orig").string() + " --layout original");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(read_json(dir / "orig" / "config.json")["vocab_size"], 200014);
  const CanonicalModel from_bin = load_model(bin);
  const CanonicalModel orig = load_model(dir / "orig");
  // The original layout keeps no bos/eos/pad ids; they come back from the tokenizer written beside it.
  ASSERT_TRUE(orig.tokenizer);
  EXPECT_EQ(orig.tokenizer->size(), 200014u);
  expect_same_model(orig, from_bin);
}

TEST(CliConvertFormats, CheckpointToModelBinIsTheGoldenFile) {
  TOKENIZER_OR_SKIP();
  TempDir dir;
  const auto r = convert((preset_a_checkpoint() / "hf").string() + " " + (dir / "model.bin").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(file_sha256(dir / "model.bin"), kGoldenModelBinSha);
  EXPECT_NE(r.output.find("truncated from 201088 to the 200014 rows"), std::string::npos) << r.output;
}

TEST(CliConvertFormats, ModelBinToHfSaysTheVocabularyIs200014) {
  GOLDENS_OR_SKIP();
  TempDir dir;
  const auto r = convert((*goldens / "a" / "model.bin").string() + " " + (dir / "hf").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("note: model.bin holds 200014 vocabulary rows, so vocab_size is 200014"), std::string::npos)
      << r.output;
  EXPECT_EQ(read_json(dir / "hf" / "config.json")["vocab_size"], 200014);
  EXPECT_TRUE(fs::exists(dir / "hf" / "tokenizer.json"));
}

TEST(CliConvertFormats, ShardSizesTakeSuffixes) {
  TempDir dir;
  const fs::path hf = preset_a_checkpoint() / "hf";
  // 30M is 30,000,000 bytes (decimal, as gguf-split and Hugging Face read it): the same shards.
  auto r = convert(hf.string() + " " + (dir / "suffix").string() + " --max-shard-size 30M");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = convert(hf.string() + " " + (dir / "bytes").string() + " --max-shard-size 30000000");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto index = read_json(dir / "suffix" / "model.safetensors.index.json");
  EXPECT_EQ(index, read_json(dir / "bytes" / "model.safetensors.index.json"));
  std::set<std::string> files;
  for (const auto& [name, file] : index["weight_map"].items()) files.insert(file.get<std::string>());
  EXPECT_GE(files.size(), 2u);  // the two 25.7 MB embedding tables cannot share a shard
  r = convert(hf.string() + " " + (dir / "bad").string() + " --max-shard-size 5X");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--max-shard-size"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "bad"));
}

}  // namespace
}  // namespace gptoss::test

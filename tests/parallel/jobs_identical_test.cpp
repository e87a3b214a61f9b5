// Output bytes do not depend on the number of threads: every conversion direction (each input
// format, single-file and sharded, to each output format, single-file and split) written with one
// thread and with eight gives the same files; with either, preset a still gives the published
// golden hashes (checkpoints, llama.cpp's GGUF, OpenAI's model.bin).
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "convert/gguf/gguf_model.h"
#include "convert/model_io.h"
#include "convert/modelbin/modelbin_model.h"
#include "convert/safetensors_model.h"
#include "convert/synthesize.h"
#include "tests/test_support.h"

namespace gptoss::test {
namespace {
namespace fs = std::filesystem;

constexpr uint64_t kShardBytes = 20'000'000;  // preset a (78 MB) in 4 to 5 pieces

// Every file under `dir` (name -> bytes).
std::map<std::string, std::vector<uint8_t>> files_in(const fs::path& dir) {
  std::map<std::string, std::vector<uint8_t>> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out[fs::relative(e.path(), dir).string()] = read_file_bytes(e.path());
  return out;
}

struct Output {
  std::string name;  // file or folder name: the format follows it
  std::optional<CheckpointLayout> layout;
  std::optional<DType> dense;
  uint64_t shard_bytes = 0;
  bool needs_tokenizer = false;
};

const std::vector<Output>& outputs() {
  static const std::vector<Output> list = {
      {"hf-sharded", CheckpointLayout::HuggingFace, std::nullopt, kShardBytes},
      {"original", CheckpointLayout::Original, std::nullopt, 0},
      {"split.gguf", std::nullopt, std::nullopt, kShardBytes},
      {"q8.gguf", std::nullopt, DType::Q8_0, 0},
      {"model.bin", std::nullopt, std::nullopt, 0, true},
  };
  return list;
}

// Writes `model` as `output` into dir/jN/ with N threads; returns the files written.
std::map<std::string, std::vector<uint8_t>> write_with(const CanonicalModel& model, const Output& output,
                                                       const fs::path& dir, unsigned threads) {
  const fs::path folder = dir / ("j" + std::to_string(threads));
  fs::create_directories(folder);
  WriteOptions options;
  options.layout = output.layout;
  options.dense_dtype = output.dense;
  options.max_shard_bytes = output.shard_bytes;
  options.threads = threads;
  write_model(model, folder / output.name, options);
  return files_in(folder);
}

class JobsIdentical : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // Inputs in every format: preset a's two checkpoints, a sharded one, a split GGUF, a model.bin.
    inputs_ = new TempDir;
    const auto& a = preset_a_checkpoint();
    SafetensorsWriteOptions sharded;
    sharded.max_shard_bytes = kShardBytes;
    write_safetensors_model(synthesize_model(synth_preset("a")), *inputs_ / "hf-sharded", sharded);
    if (fs::exists(a / "hf" / "tokenizer.json")) fs::copy_file(a / "hf" / "tokenizer.json", *inputs_ / "hf-sharded" / "tokenizer.json");
    const CanonicalModel hf = load_model(a / "hf");
    WriteOptions split;
    split.max_shard_bytes = kShardBytes;
    write_model(hf, *inputs_ / "split.gguf", split);
    if (hf.tokenizer) write_model(hf, *inputs_ / "model.bin", {});
  }
  static void TearDownTestSuite() { delete inputs_; }

  // Every output of the input at `path`, with 1 and with 8 threads.
  static void expect_identical_outputs(const fs::path& path) {
    const CanonicalModel model = load_model(path);
    for (const auto& output : outputs()) {
      if (output.needs_tokenizer && !model.tokenizer) continue;
      TempDir dir;
      const auto one = write_with(model, output, dir.path(), 1);
      const auto eight = write_with(model, output, dir.path(), 8);
      ASSERT_FALSE(one.empty()) << output.name;
      ASSERT_EQ(one.size(), eight.size()) << path << " -> " << output.name;
      for (const auto& [name, bytes] : one) {
        const auto it = eight.find(name);
        ASSERT_NE(it, eight.end()) << name;
        EXPECT_TRUE(it->second == bytes) << path << " -> " << output.name << ": " << name << " differs with -j 8";
      }
      if (output.shard_bytes) {
        EXPECT_GT(one.size(), 2u) << output.name << " was meant to be split";
      }
    }
  }

  static TempDir* inputs_;
};
TempDir* JobsIdentical::inputs_ = nullptr;

TEST_F(JobsIdentical, FromTheHfCheckpoint) { expect_identical_outputs(preset_a_checkpoint() / "hf"); }
TEST_F(JobsIdentical, FromAShardedHfCheckpoint) {
  ASSERT_TRUE(fs::exists(*inputs_ / "hf-sharded" / "model.safetensors.index.json"));
  expect_identical_outputs(*inputs_ / "hf-sharded");
}
TEST_F(JobsIdentical, FromTheOriginalCheckpoint) { expect_identical_outputs(preset_a_checkpoint() / "original"); }
TEST_F(JobsIdentical, FromASplitGguf) {
  std::vector<fs::path> first_shards;
  for (const auto& e : fs::directory_iterator(inputs_->path()))
    if (e.path().filename().string().starts_with("split-00001-of-")) first_shards.push_back(e.path());
  ASSERT_EQ(first_shards.size(), 1u);
  expect_identical_outputs(first_shards.front());
}
TEST_F(JobsIdentical, FromAModelBin) {
  TOKENIZER_OR_SKIP();
  expect_identical_outputs(*inputs_ / "model.bin");
}

TEST(JobsGolden, SynthesizedCheckpointsKeepTheirPublishedHashes) {
  GOLDENS_OR_SKIP();
  std::ifstream in(*goldens / "a" / "refs-a.json");
  const auto refs = nlohmann::json::parse(in);
  const CanonicalModel model = synthesize_model(synth_preset("a"));
  for (unsigned threads : {1u, 8u}) {
    TempDir dir;
    for (auto layout : {CheckpointLayout::HuggingFace, CheckpointLayout::Original}) {
      SafetensorsWriteOptions options;
      options.layout = layout;
      options.threads = threads;
      const std::string name = layout == CheckpointLayout::HuggingFace ? "hf" : "original";
      write_safetensors_model(model, dir / name, options);
      EXPECT_EQ(file_sha256(dir / name / "model.safetensors"), refs["inputs"][name].get<std::string>())
          << name << " with " << threads << " threads";
    }
  }
}

TEST(JobsGolden, ConvertedFilesKeepTheirPublishedHashes) {
  GOLDENS_OR_SKIP();
  TOKENIZER_OR_SKIP();
  std::ifstream in(*goldens / "a" / "refs-a.json");
  const auto refs = nlohmann::json::parse(in);
  const CanonicalModel model = load_model(preset_a_checkpoint() / "hf");
  for (unsigned threads : {1u, 8u}) {
    TempDir dir;
    for (const std::string dense : {"q8_0", "bf16"}) {
      GgufWriteOptions options;
      options.dense_dtype = dense == "q8_0" ? DType::Q8_0 : DType::BF16;
      options.name = "Hf";  // llama.cpp's name for the model: then the file is its converter's, byte for byte
      options.threads = threads;
      write_gguf_model(model, dir / (dense + ".gguf"), options);
      EXPECT_EQ(file_sha256(dir / (dense + ".gguf")), refs["gguf"][dense]["sha256"].get<std::string>())
          << dense << " with " << threads << " threads";
    }
    ModelBinWriteOptions options;
    options.threads = threads;
    write_modelbin_model(model, dir / "model.bin", options);
    EXPECT_EQ(file_sha256(dir / "model.bin"), refs["model_bin"]["sha256"].get<std::string>()) << threads << " threads";
  }
}

}  // namespace
}  // namespace gptoss::test

// Output bytes do not depend on the number of threads: every writer (each output format,
// single-file and split, with every dense encoding) and every reader (each input format,
// single-file and sharded, BF16 and Q8_0 GGUF) takes part in a conversion written with one thread
// and with eight, and both give the same files; with either, preset a still gives the published
// golden hashes (checkpoints, llama.cpp's GGUF, OpenAI's model.bin). A conversion's bytes are
// produced by the reader's source (decoding, repacking) and the writer's encoder together, chunk
// by chunk on the worker threads; a thread-dependent result would come from one side or the
// other, so each writer is written once (from the HF checkpoint) and each reader is read once,
// into a format other than its own (its bytes then pass through its transforming source, not a
// plain copy); the pairs between them repeat what those already establish. Preset a's hf/,
// original/ and BF16 model.gguf come from the ctest fixture (tests/test_support.h); the other
// inputs are made on first use, once per test process.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <stdexcept>

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

const Output kHf{"hf", CheckpointLayout::HuggingFace, std::nullopt, 0};
const Output kHfSharded{"hf-sharded", CheckpointLayout::HuggingFace, std::nullopt, kShardBytes};
const Output kOriginal{"original", CheckpointLayout::Original, std::nullopt, 0};
const Output kSplitGguf{"split.gguf", std::nullopt, std::nullopt, kShardBytes};
const Output kQ8Gguf{"q8.gguf", std::nullopt, DType::Q8_0, 0};
const Output kF16Gguf{"f16.gguf", std::nullopt, DType::F16, 0};
const Output kF32Gguf{"f32.gguf", std::nullopt, DType::F32, 0};
const Output kModelBin{"model.bin", std::nullopt, std::nullopt, 0, true};

// Every writer but the single-file checkpoint (the other inputs are written as that).
const std::vector<Output> kEveryFormat = {kHfSharded, kOriginal, kSplitGguf, kQ8Gguf, kModelBin};

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

// The encoding of a dense weight (layer 0's Q projection): what --dense chose, or what an input holds.
DType dense_dtype(const CanonicalModel& model) {
  for (const auto& t : model.tensors)
    if (t.spec.name == "layers.0.attn_q.weight") return t.dtype;
  throw std::runtime_error("no layers.0.attn_q.weight");
}

// Inputs beyond the fixture's, made on first use in a folder of this process.
const fs::path& inputs_dir() {
  static const TempDir dir;
  return dir.path();
}

const fs::path& sharded_hf_input() {
  static const fs::path path = [] {
    const fs::path dir = inputs_dir() / "hf-sharded";
    SafetensorsWriteOptions sharded;
    sharded.max_shard_bytes = kShardBytes;
    write_safetensors_model(synthesize_model(synth_preset("a")), dir, sharded);
    const fs::path tokenizer = preset_a_checkpoint() / "hf" / "tokenizer.json";
    if (fs::exists(tokenizer)) fs::copy_file(tokenizer, dir / "tokenizer.json");
    return dir;
  }();
  return path;
}

// The first shard of preset a as a split BF16 GGUF (any shard reads the set).
const fs::path& split_gguf_input() {
  static const fs::path path = [] {
    WriteOptions split;
    split.max_shard_bytes = kShardBytes;
    write_model(load_model(preset_a_checkpoint() / "hf"), inputs_dir() / "split.gguf", split);
    std::vector<fs::path> first_shards;
    for (const auto& e : fs::directory_iterator(inputs_dir()))
      if (e.path().filename().string().starts_with("split-00001-of-")) first_shards.push_back(e.path());
    if (first_shards.size() != 1) throw std::runtime_error("the split GGUF input has no single first shard");
    return first_shards.front();
  }();
  return path;
}

// Preset a as a GGUF with Q8_0 dense tensors: reading it dequantizes.
const fs::path& q8_gguf_input() {
  static const fs::path path = [] {
    WriteOptions q8;
    q8.dense_dtype = DType::Q8_0;
    write_model(load_model(preset_a_checkpoint() / "hf"), inputs_dir() / "q8.gguf", q8);
    return inputs_dir() / "q8.gguf";
  }();
  return path;
}

// Needs the tokenizer (model.bin carries it).
const fs::path& modelbin_input() {
  static const fs::path path = [] {
    write_model(load_model(preset_a_checkpoint() / "hf"), inputs_dir() / "model.bin", {});
    return inputs_dir() / "model.bin";
  }();
  return path;
}

// Every output in `outputs` of the input at `path`, with 1 and with 8 threads.
void expect_identical_outputs(const fs::path& path, const std::vector<Output>& outputs) {
  const CanonicalModel model = load_model(path);
  for (const auto& output : outputs) {
    if (output.needs_tokenizer && !model.tokenizer) continue;
    SCOPED_TRACE(path.string() + " -> " + output.name);
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
    } else if (output.layout) {
      EXPECT_TRUE(one.contains(output.name + "/model.safetensors")) << output.name << " was meant to be one file";
    }
    if (output.dense) {
      EXPECT_EQ(dense_dtype(load_model(dir / "j8" / output.name)), *output.dense) << output.name;
    }
  }
}

// Every writer, from the HF checkpoint.
TEST(JobsIdentical, FromTheHfCheckpoint) { expect_identical_outputs(preset_a_checkpoint() / "hf", kEveryFormat); }
TEST(JobsIdentical, FromTheHfCheckpointToF16AndF32Gguf) {
  expect_identical_outputs(preset_a_checkpoint() / "hf", {kF16Gguf, kF32Gguf});
}
// Every other reader, into one format unlike its own.
TEST(JobsIdentical, FromAShardedHfCheckpoint) {
  ASSERT_TRUE(fs::exists(sharded_hf_input() / "model.safetensors.index.json"));
  expect_identical_outputs(sharded_hf_input(), {kSplitGguf});
}
TEST(JobsIdentical, FromTheOriginalCheckpoint) { expect_identical_outputs(preset_a_checkpoint() / "original", {kHf}); }
TEST(JobsIdentical, FromASplitGguf) { expect_identical_outputs(split_gguf_input(), {kHf}); }
// The fixture's single-file BF16 GGUF (what `gptoss-convert hf/ model.gguf --dense bf16` writes),
// to model.bin: its tokenizer travels too.
TEST(JobsIdentical, FromASingleFileBf16Gguf) {
  TOKENIZER_OR_SKIP();
  ASSERT_EQ(dense_dtype(load_model(preset_a_bf16_gguf())), DType::BF16);
  ASSERT_TRUE(load_model(preset_a_bf16_gguf()).tokenizer) << "the fixture's GGUF carries no tokenizer: model.bin would be skipped";
  expect_identical_outputs(preset_a_bf16_gguf(), {kModelBin});
}
// Reading Q8_0 dequantizes (to BF16 for a checkpoint, exactly to F32): both ways.
TEST(JobsIdentical, FromAQ8Gguf) {
  ASSERT_EQ(dense_dtype(load_model(q8_gguf_input())), DType::Q8_0);
  expect_identical_outputs(q8_gguf_input(), {kHf, kF32Gguf});
}
TEST(JobsIdentical, FromAModelBin) {
  TOKENIZER_OR_SKIP();
  expect_identical_outputs(modelbin_input(), {kHf});
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

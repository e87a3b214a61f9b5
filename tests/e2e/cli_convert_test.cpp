// End-to-end: the CLIs as a user runs them, on the synthesized preset-a model.
#include <gtest/gtest.h>

#include "tests/test_support.h"

namespace gptoss::test {
namespace {


TEST(CliConvert, SynthThenConvertBetweenLayouts) {
  TempDir dir;
  auto synth = run_command(tool_path("gptoss-synth") + " " + (dir / "ck").string());
  ASSERT_EQ(synth.exit_code, 0) << synth.output;
  EXPECT_EQ(file_sha256(dir / "ck" / "hf" / "model.safetensors"),
            "c29b4819d0ea9542670d87e03c8b913a4ff7b8bcaf172e04b974f2b89e11df21");

  auto to_orig = run_command(tool_path("gptoss-convert") + " -q " + (dir / "ck" / "hf").string() + " " +
                             (dir / "orig").string() + " --layout original");
  ASSERT_EQ(to_orig.exit_code, 0) << to_orig.output;
  EXPECT_NE(to_orig.output.find("79 tensors, 4 layers, 8 experts"), std::string::npos) << to_orig.output;
  EXPECT_EQ(file_sha256(dir / "orig" / "model.safetensors"), file_sha256(dir / "ck" / "original" / "model.safetensors"));

  auto sharded = run_command(tool_path("gptoss-convert") + " -q " + (dir / "orig").string() + " " +
                             (dir / "sharded").string() + " --max-shard-size 20000000");
  ASSERT_EQ(sharded.exit_code, 0) << sharded.output;
  EXPECT_TRUE(std::filesystem::exists(dir / "sharded" / "model.safetensors.index.json"));
  auto back = run_command(tool_path("gptoss-convert") + " -q " + (dir / "sharded").string() + " " + (dir / "hf2").string());
  ASSERT_EQ(back.exit_code, 0) << back.output;
  EXPECT_EQ(file_sha256(dir / "hf2" / "model.safetensors"), file_sha256(dir / "ck" / "hf" / "model.safetensors"));
}

TEST(CliConvert, BadInputNamesTheFileAndExitsWith2) {
  TempDir dir;
  write_file_bytes(dir / "junk.gguf", {'n', 'o', 'p', 'e', 0, 0, 0, 0});
  auto r = run_command(tool_path("gptoss-convert") + " " + (dir / "junk.gguf").string() + " " + (dir / "out").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("junk.gguf"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("unknown leading bytes"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "out" / "model.safetensors"));

  std::filesystem::create_directories(dir / "empty");
  r = run_command(tool_path("gptoss-convert") + " " + (dir / "empty").string() + " " + (dir / "out2").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("no *.safetensors"), std::string::npos) << r.output;
}

TEST(CliConvert, TruncatedCheckpointIsRejectedWithoutOutput) {
  TempDir dir;
  ASSERT_EQ(run_command(tool_path("gptoss-synth") + " " + (dir / "ck").string() + " --layouts hf").exit_code, 0);
  std::filesystem::resize_file(dir / "ck" / "hf" / "model.safetensors", 1000000);
  auto r = run_command(tool_path("gptoss-convert") + " " + (dir / "ck" / "hf").string() + " " + (dir / "out").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("model.safetensors"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "out" / "model.safetensors"));
}

// An option the output format cannot honour is refused before anything is read or written.
TEST(CliConvert, OptionsTheOutputCannotHonourAreRefused) {
  TempDir dir;
  const auto input = (preset_a_checkpoint() / "hf").string();
  struct Case {
    std::string output, arguments, message;
  };
  const std::vector<Case> cases = {
      {"m.bin", "--dense f32", "--dense F32 (model.bin stores every dense tensor as BF16) cannot be honoured by a model.bin output"},
      {"m.bin", "--dense q8_0", "model.bin stores every dense tensor as BF16"},
      {"m.bin", "--max-shard-size 1M", "model.bin is always one file"},
      {"m.bin", "--layout original", "--layout (the tensor naming of a safetensors checkpoint) cannot be honoured by a model.bin"},
      {"m.gguf", "--layout hf", "cannot be honoured by a GGUF output"},
      {"folder", "--dense q8_0", "safetensors dense tensors are BF16, F16 or F32"},
      {"m.bin", "--mix q4_k_m", "--mix q4_k_m (llama-quantize's mixes are GGUF files) cannot be honoured by a model.bin"},
      {"m.gguf", "--mix Q6_K --dense q8_0", "--mix q6_k with --dense q8_0 (a mix quantizes the float GGUF"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.output + " " + c.arguments);
    const auto r = run_command(tool_path("gptoss-convert") + " -q " + input + " " + (dir / c.output).string() + " " + c.arguments);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << r.output;
    EXPECT_FALSE(std::filesystem::exists(dir / c.output));
    EXPECT_EQ(r.output.find("read "), std::string::npos) << "refused after reading the input: " << r.output;
  }
  // What each format can do still works: bf16 into model.bin, f16 into a checkpoint.
  EXPECT_EQ(run_command(tool_path("gptoss-convert") + " -q " + input + " " + (dir / "ok.bin").string() + " --dense bf16").exit_code, 0);
  const auto f16 = run_command(tool_path("gptoss-convert") + " -q " + input + " " + (dir / "f16").string() + " --dense f16");
  EXPECT_EQ(f16.exit_code, 0) << f16.output;
}

TEST(CliSynth, TokenizerWithoutAnHfFolderIsRefused) {
  TempDir dir;
  const auto r = run_command(tool_path("gptoss-synth") + " " + (dir / "ck").string() + " --layouts original --tokenizer x.json");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--tokenizer goes into hf/, and --layouts original writes no hf/ folder"), std::string::npos)
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "ck"));
}

}  // namespace
}  // namespace gptoss::test

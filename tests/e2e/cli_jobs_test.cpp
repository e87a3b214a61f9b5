// End-to-end: -j as a user passes it. gptoss-synth, gptoss-convert and gptoss-verify
// --write-manifest give the same bytes with one thread and with eight (tests/parallel checks every
// conversion direction through the library; this checks that the CLIs hand -j on and stay exact).
#include <gtest/gtest.h>

#include <map>

#include "tests/test_support.h"

namespace gptoss::test {
namespace {
namespace fs = std::filesystem;


// Every file under `dir` (relative name -> sha256).
std::map<std::string, std::string> hashes_in(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out[fs::relative(e.path(), dir).string()] = file_sha256(e.path());
  return out;
}

void expect_same_files(const fs::path& one, const fs::path& eight) {
  const auto a = hashes_in(one), b = hashes_in(eight);
  ASSERT_FALSE(a.empty()) << one;
  EXPECT_EQ(a, b) << one << " (-j 1) and " << eight << " (-j 8) differ";
}

TEST(CliJobs, SynthWritesTheSameBytesWithOneAndEightThreads) {
  TempDir dir;
  for (const char* j : {"1", "8"}) {
    const auto r = run_command(tool_path("gptoss-synth") + " " + (dir / ("j" + std::string(j))).string() + " --preset a -j " + j);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  expect_same_files(dir / "j1", dir / "j8");
  // The published hash of preset a (tests/e2e/cli_convert_test.cpp) with either.
  EXPECT_EQ(file_sha256(dir / "j8" / "hf" / "model.safetensors"),
            "c29b4819d0ea9542670d87e03c8b913a4ff7b8bcaf172e04b974f2b89e11df21");
}

TEST(CliJobs, ConvertWritesTheSameBytesWithOneAndEightThreads) {
  const fs::path hf = preset_a_checkpoint() / "hf";
  struct Case {
    std::string input, output, arguments;
  };
  // -j reaches one option set for every direction (WriteOptions::threads); tests/parallel writes
  // each format and reads each one with 1 and 8 threads. Here a GGUF written with an encoding and
  // a GGUF read back into a checkpoint: the library's two sides as the CLI drives them.
  const std::vector<Case> cases = {
      {hf.string(), "q8.gguf", "--dense q8_0"},
      {preset_a_bf16_gguf().string(), "hf", ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.input + " -> " + c.output + " " + c.arguments);
    TempDir dir;
    for (const char* j : {"1", "8"}) {
      fs::create_directories(dir / ("j" + std::string(j)));
      const auto r = run_command(tool_path("gptoss-convert") + " -q " + c.input + " " +
                                 (dir / ("j" + std::string(j)) / c.output).string() + " " + c.arguments + " -j " + j);
      ASSERT_EQ(r.exit_code, 0) << r.output;
    }
    expect_same_files(dir / "j1", dir / "j8");
  }
}

TEST(CliJobs, ManifestsAreTheSameWithOneAndEightThreads) {
  TempDir dir;
  const std::string inputs = (preset_a_checkpoint() / "hf").string() + " " + preset_a_bf16_gguf().string();
  for (const char* j : {"1", "8"}) {
    const auto r = run_command(tool_path("gptoss-verify") + " -q " + inputs + " --write-manifest " +
                               (dir / ("manifest-j" + std::string(j))).string() + " -j " + j);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  const auto one = read_file_bytes(dir / "manifest-j1");
  ASSERT_FALSE(one.empty());
  EXPECT_TRUE(one == read_file_bytes(dir / "manifest-j8")) << "the manifests differ with -j 8";
  const auto check = run_command(tool_path("gptoss-verify") + " -q --check " + (dir / "manifest-j1").string() + " -j 8");
  EXPECT_EQ(check.exit_code, 0) << check.output;
}

}  // namespace
}  // namespace gptoss::test

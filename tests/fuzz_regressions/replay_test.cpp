// Replays the committed fuzzer findings (fuzz/regressions/<target>/<input>) through the same
// harness functions the libFuzzer binaries run: each must now return 0 without aborting.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "fuzz/harness_support.h"
#include "tests/test_support.h"

namespace {
namespace fs = std::filesystem;
using Harness = int (*)(const uint8_t*, size_t);

const std::map<std::string, Harness>& harnesses() {
  static const std::map<std::string, Harness> all = {
      {"safetensors_header", gptoss_fuzz_safetensors_header},
      {"gguf", gptoss_fuzz_gguf},
      {"modelbin", gptoss_fuzz_modelbin},
      {"tokenizer_json", gptoss_fuzz_tokenizer_json},
      {"config_json", gptoss_fuzz_config_json},
      {"harmony_parser", gptoss_fuzz_harmony_parser},
  };
  return all;
}

TEST(FuzzRegressions, EveryFolderNamesATarget) {
  const fs::path root = GPTOSS_FUZZ_REGRESSIONS_DIR;
  ASSERT_TRUE(fs::is_directory(root));
  for (const auto& entry : fs::directory_iterator(root))
    if (entry.is_directory()) {
      EXPECT_TRUE(harnesses().count(entry.path().filename().string())) << entry.path();
    }
}

TEST(FuzzRegressions, CommittedInputsReplayCleanly) {
  const fs::path root = GPTOSS_FUZZ_REGRESSIONS_DIR;
  int replayed = 0;
  for (const auto& [target, harness] : harnesses()) {
    if (!fs::is_directory(root / target)) continue;
    for (const auto& entry : fs::directory_iterator(root / target)) {
      const auto bytes = gptoss::test::read_file_bytes(entry.path());
      SCOPED_TRACE(entry.path().string());
      EXPECT_EQ(harness(bytes.data(), bytes.size()), 0);
      ++replayed;
    }
  }
  RecordProperty("replayed", replayed);
}

TEST(FuzzRegressions, HarnessesAcceptEmptyAndTinyInputs) {
  const uint8_t bytes[] = {0, 1, 2, 3, '{', '}', 'G', 'G', 'U', 'F'};
  for (const auto& [target, harness] : harnesses()) {
    SCOPED_TRACE(target);
    EXPECT_EQ(harness(bytes, 0), 0);
    for (size_t n = 1; n <= sizeof bytes; ++n) EXPECT_EQ(harness(bytes, n), 0);
  }
}
}  // namespace

#pragma once
// Shared helpers for the test binaries: where shared/ and the set-up cache are, temp folders,
// and running the CLIs.
#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace gptoss::test {

// ../shared/goldens when present; tests that need it call GOLDENS_OR_SKIP().
std::optional<std::filesystem::path> goldens_dir();
// The real o200k_harmony tokenizer.json fetched by scripts/setup.sh, when present.
std::optional<std::filesystem::path> tokenizer_json_path();
std::filesystem::path tools_dir();

// A fresh empty folder under the system temp dir, removed at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

struct CommandResult {
  int exit_code;
  std::string output;  // stdout and stderr together
};
CommandResult run_command(const std::string& command);

std::vector<uint8_t> read_file_bytes(const std::filesystem::path& path);
void write_file_bytes(const std::filesystem::path& path, const std::vector<uint8_t>& bytes);
std::string file_sha256(const std::filesystem::path& path);

// Preset-a checkpoint (hf/ and original/) synthesized once per test binary, in a temp folder.
const std::filesystem::path& preset_a_checkpoint();

}  // namespace gptoss::test

#define GOLDENS_OR_SKIP()                                                                        \
  const auto goldens = ::gptoss::test::goldens_dir();                                            \
  if (!goldens) GTEST_SKIP() << "../shared/goldens is absent: conformance against the goldens " \
                                "needs it beside the repository";
#define TOKENIZER_OR_SKIP()                                                                      \
  const auto tokenizer_json = ::gptoss::test::tokenizer_json_path();                             \
  if (!tokenizer_json) GTEST_SKIP() << "tokenizer.json is not cached: run scripts/setup.sh";

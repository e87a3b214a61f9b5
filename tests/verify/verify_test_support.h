#pragma once
// Helpers shared by the gptoss-verify tests: finding and verdict look-ups, preset a loaded once,
// and models with one tensor's bytes replaced (preset a as a BF16 GGUF is in tests/test_support.h).
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <cstring>

#include "convert/canonical_model.h"
#include "formats/core/mapped_file.h"
#include "formats/safetensors/safetensors_file.h"
#include "tests/test_support.h"
#include "verify/equivalence.h"
#include "verify/findings.h"

namespace gptoss::test {

// gptoss-verify -q ARGS: its exit code and output.
inline CommandResult verify(const std::string& args) { return run_command(tool_path("gptoss-verify") + " -q " + args); }

// The first warning or error of `check` whose item contains `item_part`; null when none.
const Finding* find_finding(const Report& report, const std::string& check, const std::string& item_part);
inline bool has_finding(const Report& report, const std::string& check, const std::string& item_part) {
  return find_finding(report, check, item_part) != nullptr;
}
size_t count_verdict(const ModelComparison& comparison, Verdict verdict);
const TensorComparison* find_comparison(const ModelComparison& comparison, const std::string& name);

// Preset a's HF checkpoint, loaded once per test binary (with its tokenizer when cached).
const CanonicalModel& preset_a_model();

std::vector<uint8_t> tensor_bytes(const CanonicalModel& model, const std::string& name);
// A copy of `model` whose tensor `name` holds `bytes` (encoded as `dtype` when given).
CanonicalModel with_tensor_bytes(const CanonicalModel& model, const std::string& name, std::vector<uint8_t> bytes,
                                 std::optional<DType> dtype = std::nullopt);

// A private copy of preset a's hf/ folder (without the tokenizer) to corrupt.
struct HfCopy {
  TempDir dir;
  std::filesystem::path hf = dir / "hf";
  HfCopy() {
    std::filesystem::create_directories(hf);
    for (const auto& e : std::filesystem::directory_iterator(preset_a_checkpoint() / "hf"))
      if (e.path().filename() != "tokenizer.json") std::filesystem::copy_file(e.path(), hf / e.path().filename());
  }
  std::filesystem::path weights() const { return hf / "model.safetensors"; }
  std::vector<uint8_t> bytes() const { return read_file_bytes(weights()); }
  void write(const std::vector<uint8_t>& b) const { write_file_bytes(weights(), b); }
  // Replaces `from` by `to` (same length) inside the JSON header.
  void edit_header(const std::string& from, const std::string& to) const {
    ASSERT_EQ(from.size(), to.size());
    auto b = bytes();
    const uint64_t n = load_u64(b.data());
    std::string header(b.begin() + 8, b.begin() + 8 + static_cast<long>(n));
    const auto pos = header.find(from);
    ASSERT_NE(pos, std::string::npos) << from;
    std::memcpy(b.data() + 8 + pos, to.data(), to.size());
    write(b);
  }
  // Absolute file offset of a tensor's data.
  uint64_t tensor_offset(const std::string& name) const {
    const auto st = SafetensorsFile::open(weights());
    return st.data_offset() + st.find(name)->begin;
  }
};

}  // namespace gptoss::test

#pragma once
// Helpers shared by the gptoss-verify tests: finding and verdict look-ups, preset a loaded once,
// preset a as a BF16 GGUF written once, and models with one tensor's bytes replaced.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "convert/canonical_model.h"
#include "verify/equivalence.h"
#include "verify/findings.h"

namespace gptoss::test {

// The first warning or error of `check` whose item contains `item_part`; null when none.
const Finding* find_finding(const Report& report, const std::string& check, const std::string& item_part);
inline bool has_finding(const Report& report, const std::string& check, const std::string& item_part) {
  return find_finding(report, check, item_part) != nullptr;
}
size_t count_verdict(const ModelComparison& comparison, Verdict verdict);
const TensorComparison* find_comparison(const ModelComparison& comparison, const std::string& name);

// Preset a's HF checkpoint, loaded once per test binary (with its tokenizer when cached).
const CanonicalModel& preset_a_model();
// Preset a written once per test binary as a GGUF with BF16 dense tensors.
const std::filesystem::path& preset_a_bf16_gguf();

std::vector<uint8_t> tensor_bytes(const CanonicalModel& model, const std::string& name);
// A copy of `model` whose tensor `name` holds `bytes` (encoded as `dtype` when given).
CanonicalModel with_tensor_bytes(const CanonicalModel& model, const std::string& name, std::vector<uint8_t> bytes,
                                 std::optional<DType> dtype = std::nullopt);

}  // namespace gptoss::test

#pragma once
// "Do these two files hold the same weights?" Tensor by canonical tensor, after every format's
// transforms are undone: identical, identical after a layout transform, lossy as declared
// (BF16/F16 rounding, Q8_0, ggml's other quantizations, vocabulary rows dropped by model.bin) with
// measured error, or different (verify/declared_loss.h says what each encoding allows).
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "convert/canonical_model.h"

namespace gptoss {

enum class Verdict { Identical, IdenticalAfterTransform, LossyAsDeclared, Different, Missing };
std::string verdict_name(Verdict v);

struct TensorComparison {
  std::string name;
  Verdict verdict = Verdict::Different;
  std::string dtype_a, dtype_b;
  double max_abs_error = 0;
  double max_rel_error = 0;  // max |a-b| / max |a|
  std::string detail;
  double relative_rms_error = 0;  // sqrt(sum (a-b)^2 / sum a^2) over the compared values
};

struct ModelComparison {
  std::vector<TensorComparison> tensors;
  std::vector<std::string> config_differences;   // real differences in the math
  std::vector<std::string> config_notes;         // e.g. vocab_size 201088 vs 200014
  std::vector<std::string> tokenizer_differences;
  std::string digest_a, digest_b;                // model digests
  bool any_different() const;
  std::string to_table() const;
  nlohmann::json to_json() const;
};

ModelComparison compare_models(const CanonicalModel& a, const CanonicalModel& b, unsigned threads = 0);

}  // namespace gptoss

#pragma once
// gptoss-verify's structural and value checks of one model (any format).
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "convert/canonical_model.h"
#include "verify/findings.h"
#include "verify/value_checks.h"

namespace gptoss {

struct VerifyOptions {
  bool values = false;   // one pass over all data
  unsigned threads = 0;  // 0 = hardware concurrency
};

struct VerifyResult {
  std::string format;
  Report report;
  std::vector<TensorValueStats> stats;  // with --values
  nlohmann::json to_json() const;
};

// Container checks, model checks and (optionally) value checks. Throws FormatError when the
// input cannot be read at all (exit status 2 in the CLI).
VerifyResult verify_model(const std::filesystem::path& path, const VerifyOptions& options);

// The model-level checks alone, on an already loaded model (used by verify_model and tests).
void check_model_consistency(const CanonicalModel& model, const std::string& file, Report& report);

}  // namespace gptoss

#pragma once
// gptoss-verify's structural and value checks of one model (any format).
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "convert/canonical_model.h"
#include "verify/findings.h"

namespace gptoss {

struct TensorValueStats {
  std::string name;
  std::string dtype;
  uint64_t elements = 0;
  uint64_t nan = 0, inf = 0, zeros = 0;
  double abs_max = 0;
  int scale_min = -1, scale_max = -1;  // MXFP4 scale bytes, or Q8_0 scales as f16 exponent range
};

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
std::vector<TensorValueStats> check_values(const CanonicalModel& model, const std::string& file, Report& report,
                                           unsigned threads);

}  // namespace gptoss

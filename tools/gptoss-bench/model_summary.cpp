#include "tools/gptoss-bench/model_summary.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

namespace gptoss::bench {
namespace {
uint64_t elements(const TensorSpec& spec) {
  uint64_t n = 1;
  for (uint64_t d : spec.shape) n *= d;
  return n;
}

uint64_t parameters(const CanonicalTensor& tensor) {
  switch (tensor.spec.role) {
    case TensorRole::Mlp1Blocks: case TensorRole::Mlp2Blocks:  // the pair's bytes hold two values each
      return holds_mxfp4(tensor) ? 2 * elements(tensor.spec) : elements(tensor.spec);
    case TensorRole::Mlp1Scales: case TensorRole::Mlp2Scales: return 0;
    default: return elements(tensor.spec);
  }
}

// "21B", "117B", "26M": the parameter count rounded, as llama.cpp labels a model's size.
std::string size_label(uint64_t parameters) {
  const double n = static_cast<double>(parameters);
  if (n >= 1e9) return std::to_string(std::llround(n / 1e9)) + "B";
  return std::to_string(std::llround(n / 1e6)) + "M";
}
}  // namespace

ModelSummary summarize_model(const CanonicalModel& model) {
  ModelSummary s;
  std::map<std::string, uint64_t> dense_bytes;
  for (const auto& t : model.tensors) {
    s.size_bytes += t.source->size();
    s.parameters += parameters(t);
    if (is_matrix_role(t.spec.role)) dense_bytes[std::string(dtype_name(t.dtype))] += t.source->size();
  }
  std::vector<std::pair<std::string, uint64_t>> by_share(dense_bytes.begin(), dense_bytes.end());
  std::stable_sort(by_share.begin(), by_share.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  for (const auto& [name, bytes] : by_share) s.dense_encoding += (s.dense_encoding.empty() ? "" : "+") + name;
  // As llama.cpp names a file by its main type ("mostly Q8_0"): the largest share alone.
  const std::string main_encoding = by_share.empty() ? "" : by_share.front().first;
  s.type = "gpt-oss " + size_label(s.parameters) + " " + main_encoding + " + MXFP4";
  return s;
}

}  // namespace gptoss::bench

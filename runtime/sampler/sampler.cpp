#include "runtime/sampler/sampler.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace gptoss::sampling {

void validate(const SamplingParams& p) {
  if (!std::isfinite(p.temperature)) throw std::invalid_argument("temperature must be finite");
  if (!(p.top_p > 0.0f)) throw std::invalid_argument("top-p must be > 0, got " + std::to_string(p.top_p));
  if (!(p.min_p >= 0.0f && p.min_p <= 1.0f)) throw std::invalid_argument("min-p must be in [0, 1], got " + std::to_string(p.min_p));
}

uint32_t argmax(std::span<const float> logits) {
  if (logits.empty()) throw std::invalid_argument("no logits to choose from");
  return static_cast<uint32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

std::vector<Candidate> filtered_distribution(std::span<const float> logits, const SamplingParams& p) {
  validate(p);
  if (p.temperature <= 0.0f) return {{argmax(logits), 1.0}};
  const auto better = [&](uint32_t a, uint32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };

  std::vector<uint32_t> ids(logits.size());
  for (uint32_t i = 0; i < ids.size(); ++i) ids[i] = i;
  // Top-k first: it only needs a partial sort and makes the later steps cheap.
  if (p.top_k > 0 && p.top_k < ids.size()) {
    std::partial_sort(ids.begin(), ids.begin() + p.top_k, ids.end(), better);
    ids.resize(p.top_k);
  } else {
    std::sort(ids.begin(), ids.end(), better);
  }
  // Softmax of logits / temperature over the survivors, in double.
  const double max_scaled = logits[ids[0]] / static_cast<double>(p.temperature);
  std::vector<Candidate> candidates(ids.size());
  double total = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const double w = std::exp(logits[ids[i]] / static_cast<double>(p.temperature) - max_scaled);
    candidates[i] = {ids[i], w};
    total += w;
  }
  for (auto& c : candidates) c.probability /= total;
  if (p.top_p < 1.0f) {
    double mass = 0;
    size_t keep = 0;
    while (keep < candidates.size() && mass < static_cast<double>(p.top_p)) mass += candidates[keep++].probability;
    candidates.resize(std::max<size_t>(keep, 1));
  }
  if (p.min_p > 0.0f) {
    const double threshold = static_cast<double>(p.min_p) * candidates[0].probability;
    size_t keep = 1;
    while (keep < candidates.size() && candidates[keep].probability >= threshold) ++keep;
    candidates.resize(keep);
  }
  double kept = 0;
  for (const auto& c : candidates) kept += c.probability;
  for (auto& c : candidates) c.probability /= kept;
  return candidates;
}

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) { validate(params); }

uint32_t Sampler::sample(std::span<const float> logits) {
  if (params_.temperature <= 0.0f) return argmax(logits);
  const auto candidates = filtered_distribution(logits, params_);
  const double u = rng_.next_double();
  double cumulative = 0;
  for (const auto& c : candidates) {
    cumulative += c.probability;
    if (u < cumulative) return c.id;
  }
  return candidates.back().id;  // u within rounding of 1
}

StopReason StopCondition::check(uint32_t token, uint64_t generated) const {
  if (std::find(stop_tokens.begin(), stop_tokens.end(), token) != stop_tokens.end()) return StopReason::StopToken;
  if (max_tokens && generated >= *max_tokens) return StopReason::MaxTokens;
  return StopReason::None;
}

}  // namespace gptoss::sampling

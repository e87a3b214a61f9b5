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

namespace {

// The surviving candidates with normalised probabilities. Top-p and min-p both keep a prefix of
// the tokens ordered by probability (min-p's threshold is relative to the top token, which
// top-p never removes), so applying min-p first as a plain threshold gives the same set and
// leaves less to sort. With `sorted` false the survivors keep id order unless top-p had to sort
// them, which saves a sort of the whole vocabulary per sampled token.
std::vector<Candidate> surviving_candidates(std::span<const float> logits, const SamplingParams& p, bool sorted) {
  const auto better = [&](uint32_t a, uint32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  std::vector<uint32_t> ids(logits.size());
  for (uint32_t i = 0; i < ids.size(); ++i) ids[i] = i;
  if (p.top_k > 0 && p.top_k < ids.size()) {
    std::partial_sort(ids.begin(), ids.begin() + p.top_k, ids.end(), better);
    ids.resize(p.top_k);
  }
  // Weights exp((l - l_max) / T): the top token weighs 1, so min-p is the weight threshold.
  float max_logit = logits[ids[0]];
  for (uint32_t id : ids) max_logit = std::max(max_logit, logits[id]);
  const double temperature = p.temperature;
  std::vector<Candidate> candidates;
  candidates.reserve(ids.size());
  double total = 0;
  for (uint32_t id : ids) {
    const double w = std::exp((static_cast<double>(logits[id]) - max_logit) / temperature);
    total += w;
    if (w >= static_cast<double>(p.min_p)) candidates.push_back({id, w});
  }
  const auto more_probable = [&](const Candidate& a, const Candidate& b) { return better(a.id, b.id); };
  if (p.top_p < 1.0f) {
    // Sort a growing prefix until it holds the nucleus (usually a few hundred tokens).
    const double target = static_cast<double>(p.top_p) * total;
    for (size_t prefix = 256;; prefix *= 16) {
      // Past a quarter of the candidates a full sort is cheaper than another selection.
      prefix = prefix * 4 > candidates.size() ? candidates.size() : prefix;
      const auto middle = candidates.begin() + static_cast<std::ptrdiff_t>(prefix);
      if (middle != candidates.end()) std::nth_element(candidates.begin(), middle, candidates.end(), more_probable);
      std::sort(candidates.begin(), middle, more_probable);
      double mass = 0;
      size_t keep = 0;
      while (keep < prefix && mass < target) mass += candidates[keep++].probability;
      if (mass >= target || prefix == candidates.size()) {
        candidates.resize(std::max<size_t>(keep, 1));
        break;
      }
    }
  } else if (sorted) {
    std::sort(candidates.begin(), candidates.end(), more_probable);
  }
  double kept = 0;
  for (const auto& c : candidates) kept += c.probability;
  for (auto& c : candidates) c.probability /= kept;
  return candidates;
}

}  // namespace

std::vector<Candidate> filtered_distribution(std::span<const float> logits, const SamplingParams& p) {
  validate(p);
  if (p.temperature <= 0.0f) return {{argmax(logits), 1.0}};
  return surviving_candidates(logits, p, /*sorted=*/true);
}

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) { validate(params); }

uint32_t Sampler::sample(std::span<const float> logits) {
  if (params_.temperature <= 0.0f) return argmax(logits);
  const auto candidates = surviving_candidates(logits, params_, /*sorted=*/false);
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

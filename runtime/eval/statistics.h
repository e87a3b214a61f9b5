#pragma once
// What the per-position results add up to: perplexity (with llama-perplexity's uncertainty), and
// for a candidate against a reference the distribution of the KL divergence over positions, top-1
// agreement and the change in the probability of the reference's top token.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "runtime/eval/distribution_math.h"

namespace gptoss::eval {

// The q-quantile (q in [0, 1]) by linear interpolation between the two closest ranks
// (rank q * (n - 1) of the sorted values: numpy's default). NaN for no values.
double percentile(std::span<const double> sorted, double q);

// Negative log-likelihoods of the scored tokens.
struct NllStats {
  double sum = 0, sum_squares = 0;
  uint64_t count = 0;
  void add(double nll) {
    sum += nll;
    sum_squares += nll * nll;
    ++count;
  }
  void merge(const NllStats& other) {
    sum += other.sum;
    sum_squares += other.sum_squares;
    count += other.count;
  }
  double mean() const;
  double perplexity() const;  // exp(mean nll)
  // PPL * standard error of the mean nll, as llama-perplexity prints "PPL = x +/- u".
  double perplexity_uncertainty() const;
};

struct ComparisonSummary {
  uint64_t positions = 0;
  double kl_mean = 0, kl_median = 0, kl_p99 = 0, kl_p999 = 0, kl_max = 0;
  // Where kl_max lies: its index in the positions' order (the first of equal ones); none for no
  // positions or a NaN.
  std::optional<uint64_t> kl_max_index;
  double top1_agreement = 0;  // fraction of positions whose argmax is the reference's
  // dp = Q_cand(ref top) - P_ref(ref top), over positions.
  double dp_mean = 0, dp_rms = 0;
};
ComparisonSummary summarize_comparisons(std::span<const PositionComparison> positions);

}  // namespace gptoss::eval

#include "runtime/eval/statistics.h"

#include <algorithm>
#include <cmath>

namespace gptoss::eval {

double percentile(std::span<const double> sorted, double q) {
  if (sorted.empty()) return NAN;
  const double rank = std::clamp(q, 0.0, 1.0) * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<size_t>(std::floor(rank));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  const double t = rank - static_cast<double>(below);
  return sorted[below] + t * (sorted[above] - sorted[below]);
}

double NllStats::mean() const { return count ? sum / static_cast<double>(count) : NAN; }

double NllStats::perplexity() const { return std::exp(mean()); }

double NllStats::perplexity_uncertainty() const {
  if (count < 2) return NAN;
  const double n = static_cast<double>(count);
  const double m = sum / n;
  const double variance = std::max(0.0, sum_squares / n - m * m);
  return perplexity() * std::sqrt(variance / (n - 1));
}

ComparisonSummary summarize_comparisons(std::span<const PositionComparison> positions) {
  ComparisonSummary s;
  s.positions = positions.size();
  if (positions.empty()) return s;
  std::vector<double> kl;
  kl.reserve(positions.size());
  double kl_sum = 0, dp_sum = 0, dp_squares = 0;
  uint64_t same = 0;
  bool nan = false;
  for (const auto& p : positions) {
    nan = nan || std::isnan(p.kl);
    kl.push_back(p.kl);
    kl_sum += p.kl;
    const double dp = p.q_ref_top - p.p_ref_top;
    dp_sum += dp;
    dp_squares += dp * dp;
    same += p.ref_top == p.cand_top;
  }
  const double n = static_cast<double>(positions.size());
  if (nan) {  // a model gave non-finite logits: say so rather than sort NaNs
    s.kl_mean = s.kl_median = s.kl_p99 = s.kl_p999 = s.kl_max = NAN;
  } else {
    std::sort(kl.begin(), kl.end());
    s.kl_mean = kl_sum / n;
    s.kl_median = percentile(kl, 0.5);
    s.kl_p99 = percentile(kl, 0.99);
    s.kl_p999 = percentile(kl, 0.999);
    s.kl_max = kl.back();
    for (size_t i = 0; i < positions.size(); ++i)
      if (positions[i].kl == s.kl_max) {
        s.kl_max_index = i;
        break;
      }
  }
  s.top1_agreement = static_cast<double>(same) / n;
  s.dp_mean = dp_sum / n;
  s.dp_rms = std::sqrt(dp_squares / n);
  return s;
}

}  // namespace gptoss::eval

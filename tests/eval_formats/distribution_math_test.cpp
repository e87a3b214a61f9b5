// The per-position statistics against the definitions written out here in double with std::exp,
// on small rows of logits.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "runtime/eval/distribution_math.h"
#include "runtime/eval/statistics.h"
#include "tests/test_support.h"

namespace gptoss::eval {
namespace {

std::vector<double> softmax(const std::vector<float>& v) {
  double m = -INFINITY;
  for (float x : v) m = std::max(m, static_cast<double>(x));
  double z = 0;
  for (float x : v) z += std::exp(x - m);
  std::vector<double> p;
  for (float x : v) p.push_back(std::exp(x - m) / z);
  return p;
}

double direct_kl(const std::vector<float>& ref, const std::vector<float>& cand) {
  const auto p = softmax(ref), q = softmax(cand);
  double kl = 0;
  for (size_t i = 0; i < p.size(); ++i) kl += p[i] * std::log(p[i] / q[i]);
  return kl;
}

// 37 values: more than four 8-lane blocks and a remainder, a wide range of logits.
std::vector<float> row(uint32_t seed, float spread) {
  std::vector<float> v;
  uint32_t s = seed;
  for (int i = 0; i < 37; ++i) {
    s = s * 1664525u + 1013904223u;
    v.push_back(spread * (static_cast<float>(s >> 8) / 16777216.0f - 0.5f));
  }
  return v;
}

TEST(DistributionMath, ExpMatchesStdExpToAboutOneUlp) {
  double worst = 0;
  for (float x = -86.9f; x <= 0; x += 0.0137f) {
    const double exact = std::exp(static_cast<double>(x));
    worst = test::worse(worst, std::fabs(exp_nonpositive(x) - exact) / exact);
  }
  EXPECT_LT(worst, 2.5e-7);
  EXPECT_EQ(exp_nonpositive(0.0f), 1.0f);
  EXPECT_EQ(exp_nonpositive(-100.0f), 0.0f);
  EXPECT_EQ(exp_nonpositive(-INFINITY), 0.0f);
}

TEST(DistributionMath, SummaryIsTheLogSoftmaxNormalizer) {
  const auto v = row(1, 30);
  const auto s = summarize_row(v);
  double m = -INFINITY, z = 0;
  uint32_t arg = 0;
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] > m) m = v[arg = static_cast<uint32_t>(i)];
  for (float x : v) z += std::exp(x - m);
  EXPECT_EQ(s.argmax, arg);
  EXPECT_EQ(s.max, static_cast<float>(m));
  EXPECT_NEAR(s.log_norm, m + std::log(z), 1e-7);
}

TEST(DistributionMath, KlTopAndProbabilityOfTheReferencesTopAgainstTheDefinitions) {
  for (uint32_t seed = 1; seed < 20; ++seed) {
    const auto ref = row(seed, 12);
    auto cand = ref;
    const auto noise = row(seed + 100, 0.5f);
    for (size_t i = 0; i < cand.size(); ++i) cand[i] += noise[i] + 3.0f;  // an offset changes nothing
    const auto c = compare_position(ref, cand);
    const double kl = direct_kl(ref, cand);
    EXPECT_GT(kl, 1e-4);
    EXPECT_NEAR(c.kl, kl, 1e-7 * kl) << seed;
    const auto p = softmax(ref), q = softmax(cand);
    const auto top = static_cast<uint32_t>(std::max_element(p.begin(), p.end()) - p.begin());
    const auto cand_top = static_cast<uint32_t>(std::max_element(q.begin(), q.end()) - q.begin());
    EXPECT_EQ(c.ref_top, top);
    EXPECT_EQ(c.cand_top, cand_top);
    EXPECT_NEAR(c.p_ref_top, p[top], 1e-6 * p[top]);
    EXPECT_NEAR(c.q_ref_top, q[top], 1e-6 * q[top]);
  }
}

// Two f32 engines differ by ~1e-5 in the logits: KL ~1e-11 must still come out right, which an
// f32 exp of each distribution's normalizer (error ~1e-8 absolute) could not give.
TEST(DistributionMath, TinyDivergencesKeepTheirRelativePrecision) {
  for (uint32_t seed = 1; seed < 10; ++seed) {
    const auto ref = row(seed, 12);
    auto cand = ref;
    const auto noise = row(seed + 50, 1e-4f);
    for (size_t i = 0; i < cand.size(); ++i) cand[i] = cand[i] + noise[i] + 1.0f;
    const double kl = direct_kl(ref, cand);
    ASSERT_GT(kl, 1e-13);
    ASSERT_LT(kl, 1e-9);
    EXPECT_NEAR(compare_position(ref, cand).kl, kl, 1e-5 * kl) << seed;
  }
}

TEST(DistributionMath, IdenticalRowsGiveExactlyZero) {
  const auto v = row(7, 40);
  const auto c = compare_position(v, v);
  EXPECT_EQ(c.kl, 0.0);
  EXPECT_EQ(c.ref_top, c.cand_top);
  EXPECT_EQ(c.p_ref_top, c.q_ref_top);
}

TEST(DistributionMath, AggregatesAgainstTheDefinitions) {
  // Percentiles interpolate between ranks: q * (n - 1).
  const std::vector<double> sorted = {1, 2, 3, 4, 10};
  EXPECT_DOUBLE_EQ(percentile(sorted, 0.5), 3);
  EXPECT_DOUBLE_EQ(percentile(sorted, 0.99), 4 + 0.96 * 6);
  EXPECT_DOUBLE_EQ(percentile(sorted, 1.0), 10);
  EXPECT_TRUE(std::isnan(percentile({}, 0.5)));

  NllStats nll;
  const std::vector<double> values = {1.5, 2.0, 0.25, 3.0};
  for (double v : values) nll.add(v);
  const double mean = (1.5 + 2.0 + 0.25 + 3.0) / 4;
  EXPECT_DOUBLE_EQ(nll.perplexity(), std::exp(mean));
  double var = 0;
  for (double v : values) var += (v - mean) * (v - mean);
  var /= 4;
  EXPECT_NEAR(nll.perplexity_uncertainty(), std::exp(mean) * std::sqrt(var / 3), 1e-12);

  std::vector<PositionComparison> positions(4);
  const double kls[] = {0.4, 0.1, 0.3, 0.2};
  for (int i = 0; i < 4; ++i) {
    positions[i].kl = kls[i];
    positions[i].ref_top = 5;
    positions[i].cand_top = i == 2 ? 6 : 5;
    positions[i].p_ref_top = 0.5;
    positions[i].q_ref_top = 0.5 + 0.1 * i;
  }
  const auto s = summarize_comparisons(positions);
  EXPECT_DOUBLE_EQ(s.kl_mean, 0.25);
  EXPECT_DOUBLE_EQ(s.kl_median, 0.25);
  EXPECT_DOUBLE_EQ(s.kl_max, 0.4);
  EXPECT_EQ(s.kl_max_index, 0u);
  EXPECT_DOUBLE_EQ(s.top1_agreement, 0.75);
  EXPECT_NEAR(s.dp_mean, 0.15, 1e-15);
  EXPECT_NEAR(s.dp_rms, std::sqrt((0 + 0.01 + 0.04 + 0.09) / 4), 1e-15);
}

// Where the largest KL lies: the first of equal ones; none where a KL is NaN or nothing was compared.
TEST(DistributionMath, LargestKlIsPlacedAtItsFirstPosition) {
  std::vector<PositionComparison> positions(5);
  const double kls[] = {0.1, 0.7, 0.2, 0.7, 0.0};
  for (size_t i = 0; i < positions.size(); ++i) positions[i].kl = kls[i];
  EXPECT_EQ(summarize_comparisons(positions).kl_max_index, 1u);
  positions[4].kl = NAN;
  EXPECT_FALSE(summarize_comparisons(positions).kl_max_index.has_value());
  EXPECT_FALSE(summarize_comparisons({}).kl_max_index.has_value());
}

}  // namespace
}  // namespace gptoss::eval

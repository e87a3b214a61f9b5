// The sampler on distributions small enough to compute by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "runtime/sampler/sampler.h"

namespace gptoss::sampling {
namespace {

// Logits whose softmax at temperature 1 is exactly these probabilities (up to rounding).
const std::vector<double> kProbs = {0.05, 0.5, 0.1, 0.2, 0.15};  // ids 0..4; order by p: 1, 3, 4, 2, 0
std::vector<float> logits_of(const std::vector<double>& probs) {
  std::vector<float> logits;
  for (double p : probs) logits.push_back(static_cast<float>(std::log(p)));
  return logits;
}

void expect_distribution(const std::vector<Candidate>& got, const std::vector<std::pair<uint32_t, double>>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].id, want[i].first) << "rank " << i;
    EXPECT_NEAR(got[i].probability, want[i].second, 1e-6) << "rank " << i;
  }
}

TEST(Sampler, TemperatureOneKeepsTheDistribution) {
  SamplingParams p;
  p.temperature = 1;
  expect_distribution(filtered_distribution(logits_of(kProbs), p), {{1, 0.5}, {3, 0.2}, {4, 0.15}, {2, 0.1}, {0, 0.05}});
}

TEST(Sampler, TemperatureTwoTakesSquareRoots) {
  SamplingParams p;
  p.temperature = 2;
  const double z = std::sqrt(0.5) + std::sqrt(0.2) + std::sqrt(0.15) + std::sqrt(0.1) + std::sqrt(0.05);
  expect_distribution(filtered_distribution(logits_of(kProbs), p),
                      {{1, std::sqrt(0.5) / z}, {3, std::sqrt(0.2) / z}, {4, std::sqrt(0.15) / z},
                       {2, std::sqrt(0.1) / z}, {0, std::sqrt(0.05) / z}});
}

TEST(Sampler, TopKKeepsTheKMostLikely) {
  SamplingParams p;
  p.temperature = 1;
  p.top_k = 2;
  expect_distribution(filtered_distribution(logits_of(kProbs), p), {{1, 0.5 / 0.7}, {3, 0.2 / 0.7}});
}

TEST(Sampler, TopPKeepsTheSmallestPrefixReachingP) {
  SamplingParams p;
  p.temperature = 1;
  p.top_p = 0.8f;  // 0.5, 0.7, then 0.85 >= 0.8
  expect_distribution(filtered_distribution(logits_of(kProbs), p), {{1, 0.5 / 0.85}, {3, 0.2 / 0.85}, {4, 0.15 / 0.85}});
  p.top_p = 0.3f;  // the top token alone already reaches it
  expect_distribution(filtered_distribution(logits_of(kProbs), p), {{1, 1.0}});
}

TEST(Sampler, MinPKeepsTokensAboveAFractionOfTheTop) {
  SamplingParams p;
  p.temperature = 1;
  p.min_p = 0.35f;  // threshold 0.175: keeps 0.5 and 0.2
  expect_distribution(filtered_distribution(logits_of(kProbs), p), {{1, 0.5 / 0.7}, {3, 0.2 / 0.7}});
}

TEST(Sampler, FiltersApplyInOrderTopKThenTopP) {
  SamplingParams p;
  p.temperature = 1;
  p.top_k = 3;     // 0.5, 0.2, 0.15 -> 0.588, 0.235, 0.176
  p.top_p = 0.6f;  // 0.588 < 0.6, 0.824 >= 0.6
  expect_distribution(filtered_distribution(logits_of(kProbs), p), {{1, 0.5 / 0.7}, {3, 0.2 / 0.7}});
}

TEST(Sampler, GreedyTakesTheArgmaxWithTiesToTheLowestId) {
  const std::vector<float> logits = {0.0f, 2.0f, 5.0f, 5.0f, 1.0f};
  Sampler sampler(SamplingParams{});
  EXPECT_EQ(sampler.sample(logits), 2u);
  expect_distribution(filtered_distribution(logits, SamplingParams{}), {{2, 1.0}});
}

TEST(Sampler, SeededSamplingIsDeterministicAndFollowsTheDistribution) {
  SamplingParams p;
  p.temperature = 1;
  p.seed = 42;
  const auto logits = logits_of(kProbs);
  Sampler a(p), b(p);
  std::map<uint32_t, int> counts;
  constexpr int kDraws = 20000;
  for (int i = 0; i < kDraws; ++i) {
    const uint32_t token = a.sample(logits);
    ASSERT_EQ(token, b.sample(logits)) << "draw " << i;
    ++counts[token];
  }
  for (uint32_t id = 0; id < kProbs.size(); ++id)
    EXPECT_NEAR(counts[id] / double(kDraws), kProbs[id], 0.015) << "id " << id;
  p.seed = 43;
  Sampler c(p), d(SamplingParams{1, 0, 1, 0, 42});
  int same = 0;
  for (int i = 0; i < 100; ++i) same += c.sample(logits) == d.sample(logits);
  EXPECT_LT(same, 100);
}

TEST(Sampler, RngIsFixedAcrossPlatforms) {
  Rng rng(0);
  const uint64_t first = rng.next_u64();
  Rng again(0);
  EXPECT_EQ(again.next_u64(), first);
  EXPECT_NE(Rng(1).next_u64(), first);
  for (int i = 0; i < 1000; ++i) {
    const double u = rng.next_double();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
  }
}

TEST(Sampler, RejectsNonsenseParameters) {
  SamplingParams p;
  p.top_p = 0;
  EXPECT_THROW(Sampler{p}, std::invalid_argument);
  p = {};
  p.min_p = 2;
  EXPECT_THROW(Sampler{p}, std::invalid_argument);
}

TEST(StopCondition, StopsOnStopTokensAndTheBudget) {
  StopCondition stop{{200002, 200012}, 3};
  EXPECT_EQ(stop.check(5, 1), StopReason::None);
  EXPECT_EQ(stop.check(200012, 2), StopReason::StopToken);
  EXPECT_EQ(stop.check(7, 3), StopReason::MaxTokens);
  EXPECT_EQ(stop.check(200002, 3), StopReason::StopToken);  // a stop token wins over the budget
  StopCondition unbounded{{}, std::nullopt};
  EXPECT_EQ(unbounded.check(1, 1000000), StopReason::None);
}

}  // namespace
}  // namespace gptoss::sampling

// The TrainedLike statistics keep a forward pass well-conditioned: the residual stream grows
// slowly instead of exploding, and routers spread tokens over the experts. Checked on a small
// shape with the 20b's proportions (CI), against the fixture's statistics at the same shape
// (which fail the same bounds). bench/synth_statistics_widths measures the 20b widths for
// docs/eval.md.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "convert/synthesize.h"
#include "tests/synth_statistics/synth_statistics.h"
#include "tests/test_support.h"

namespace gptoss::test {
namespace {

// 20b's proportions (32 experts, top-4, 64-dim heads, GQA 8) at hidden 512.
SynthPreset small(SynthStatistics statistics) {
  return {"small", 6, 512, 512, 16, 2, 64, 32, 4, 201088, 128, 1, statistics};
}

CanonicalModel small_model(SynthStatistics statistics) {
  return with_vocabulary(synthesize_model(small(statistics)), 4096);
}

TEST(SynthStatistics, TrainedLikeStaysWellConditionedAndSpreadsTokens) {
  const auto s = measure_statistics(small_model(SynthStatistics::TrainedLike), sample_tokens(48, 4096));
  std::printf("%s", statistics_table(s).c_str());
  ASSERT_EQ(s.layers.size(), 6u);
  for (const auto& l : s.layers) {
    SCOPED_TRACE("layer " + std::to_string(l.layer));
    EXPECT_LT(l.residual_rms, 4.0);
    EXPECT_LT(l.residual_max, 40.0);
    EXPECT_GT(l.router_entropy, 0.4);  // each token's router is not one-hot
    EXPECT_GT(l.top_weight, 0.3);      // nor flat over its k experts
    EXPECT_LT(l.top_weight, 0.7);
    EXPECT_GT(l.load_entropy, 0.8);    // the (token, slot) assignments spread over the experts
    EXPECT_LT(l.load_max, 6.0);
    EXPECT_GE(l.experts_used, 24u);
  }
  EXPECT_GT(s.layers.back().residual_rms, s.layers.front().residual_rms);
}

TEST(SynthStatistics, FixtureStatisticsFailTheSameBounds) {
  const auto s = measure_statistics(small_model(SynthStatistics::Fixture), sample_tokens(48, 4096));
  std::printf("%s", statistics_table(s).c_str());
  EXPECT_GT(s.layers.front().residual_max, 40.0);
  EXPECT_LT(s.layers.front().router_entropy, 0.4);
}

TEST(SynthStatistics, PresetsKeepTheirStatistics) {
  EXPECT_EQ(synth_preset("a").statistics, SynthStatistics::Fixture);
  EXPECT_EQ(synth_preset("20b").statistics, SynthStatistics::TrainedLike);
  EXPECT_EQ(synth_preset("120b").statistics, SynthStatistics::TrainedLike);
}

}  // namespace
}  // namespace gptoss::test

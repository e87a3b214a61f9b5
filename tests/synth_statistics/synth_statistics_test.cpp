// The TrainedLike statistics keep a forward pass well-conditioned: the residual stream grows
// slowly instead of exploding, and routers spread tokens over the experts. Checked on a small
// shape with the 20b's proportions (CI), against the fixture's statistics at the same shape
// (which fail the same bounds); the disabled test measures the 20b widths for docs/eval.md.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "convert/synthesize.h"
#include "tests/synth_statistics/synth_statistics.h"
#include "tests/test_support.h"

namespace gptoss::test {
namespace {

std::vector<uint32_t> tokens(size_t n, uint32_t vocab) {
  std::vector<uint32_t> ids;
  uint32_t s = 12345;
  for (size_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    ids.push_back((s >> 8) % vocab);
  }
  return ids;
}

// 20b's proportions (32 experts, top-4, 64-dim heads, GQA 8) at hidden 512.
SynthPreset small(SynthStatistics statistics) {
  return {"small", 6, 512, 512, 16, 2, 64, 32, 4, 201088, 128, 1, statistics};
}

CanonicalModel small_model(SynthStatistics statistics) {
  return with_vocabulary(synthesize_model(small(statistics)), 4096);
}

TEST(SynthStatistics, TrainedLikeStaysWellConditionedAndSpreadsTokens) {
  const auto s = measure_statistics(small_model(SynthStatistics::TrainedLike), tokens(48, 4096));
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
  const auto s = measure_statistics(small_model(SynthStatistics::Fixture), tokens(48, 4096));
  std::printf("%s", statistics_table(s).c_str());
  EXPECT_GT(s.layers.front().residual_max, 40.0);
  EXPECT_LT(s.layers.front().router_entropy, 0.4);
}

TEST(SynthStatistics, PresetsKeepTheirStatistics) {
  EXPECT_EQ(synth_preset("a").statistics, SynthStatistics::Fixture);
  EXPECT_EQ(synth_preset("20b").statistics, SynthStatistics::TrainedLike);
  EXPECT_EQ(synth_preset("120b").statistics, SynthStatistics::TrainedLike);
}

// docs/eval.md's table: the 20b widths (hidden 2880, 64/8 heads, 32 experts, top-4) with fewer
// layers and a smaller vocabulary so the CPU engine's f32 weights fit in ~11 GB. It measures
// statistics, not time, so it stays a test; it is disabled because the full width needs ~11 GB and
// minutes of CPU forward passes, more than CI's suite can spend. Run by hand:
//   build/tests/synth_statistics/synth_statistics_tests --gtest_also_run_disabled_tests --gtest_filter='*20bWidths*'
// GPTOSS_SYNTH_LAYERS (3), GPTOSS_SYNTH_EXPERTS (32) and GPTOSS_SYNTH_ROUTERS=0 (no router
// statistics: one forward instead of one per layer) trade the shape for depth.
TEST(SynthStatistics, DISABLED_20bWidths) {
  const char* layers = std::getenv("GPTOSS_SYNTH_LAYERS");
  const char* experts = std::getenv("GPTOSS_SYNTH_EXPERTS");
  const char* routers = std::getenv("GPTOSS_SYNTH_ROUTERS");
  SynthPreset p = synth_preset("20b");
  p.name = "20b widths";
  p.layers = layers ? static_cast<uint32_t>(std::atoi(layers)) : 3;
  p.experts = experts ? static_cast<uint32_t>(std::atoi(experts)) : 32;
  const uint32_t vocab = 32768;
  std::printf("%u layers, %u experts, vocabulary %u\n%s", p.layers, p.experts, vocab,
              statistics_table(measure_statistics(with_vocabulary(synthesize_model(p), vocab), tokens(64, vocab),
                                                 !routers || std::string(routers) != "0"))
                  .c_str());
}

}  // namespace
}  // namespace gptoss::test

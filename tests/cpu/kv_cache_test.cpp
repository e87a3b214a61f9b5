// Decoding through the KV cache must give what a full prefill gives: prefill T tokens then decode
// one equals prefill of T + 1, for T = 1..40 of the 70-token "random" prompt, which crosses the
// sliding window (8) of the even layers and the 4-token boundary the Vulkan kernels tile by.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "tests/cpu/engines.h"
#include "tests/cpu/golden_refs.h"
#include "tests/test_support.h"

namespace gptoss::test {
namespace {

TEST(CpuKvCache, PrefillThenDecodeEqualsLongerPrefill) {
  GOLDENS_OR_SKIP();
  GoldenRefs refs(*goldens);
  const auto ids = refs.ids("random");
  ASSERT_EQ(ids.size(), 70u);
  const auto probe_ids = refs.i32("probe_ids");
  const auto probe = refs.f32("random.logits_probe");
  auto& engine = hf_engine();
  const size_t vocab = engine.vocab_size();
  float worst_vs_prefill = 0, worst_vs_golden = 0;
  for (size_t t = 1; t <= 40; ++t) {
    SCOPED_TRACE("T = " + std::to_string(t));
    engine.reset();
    engine.forward(std::span(ids).first(t), runtime::LogitRows::None);
    ASSERT_EQ(engine.position(), t);
    const auto decoded = engine.forward(std::span(ids).subspan(t, 1));
    engine.reset();
    const auto prefilled = engine.forward(std::span(ids).first(t + 1));
    ASSERT_EQ(decoded.size(), vocab);
    ASSERT_EQ(prefilled.size(), vocab);
    const float diff = max_abs_diff(decoded.data(), prefilled.data(), vocab);
    EXPECT_LE(diff, 1e-4f);
    worst_vs_prefill = std::max(worst_vs_prefill, diff);
    // And the decoded position agrees with transformers at that position.
    for (size_t n = 0; n < probe_ids.size(); ++n) {
      const float golden = probe[t * probe_ids.size() + n];
      worst_vs_golden = std::max(worst_vs_golden, std::abs(decoded[static_cast<size_t>(probe_ids[n])] - golden));
    }
  }
  EXPECT_LE(worst_vs_golden, 1e-3f);
  std::printf("decode vs prefill max |diff| %.2e, decode vs golden probe %.2e\n",
              static_cast<double>(worst_vs_prefill), static_cast<double>(worst_vs_golden));
}

TEST(CpuKvCache, DecodeContinuesFromCachedPositions) {
  GOLDENS_OR_SKIP();
  GoldenRefs refs(*goldens);
  const auto ids = refs.ids("random");
  auto& engine = hf_engine();
  engine.reset();
  // Split the prompt in uneven chunks: every chunk extends the cache from where it stopped.
  const size_t cuts[] = {0, 3, 4, 11, 12, 30, 70};
  std::vector<float> last;
  for (size_t i = 0; i + 1 < std::size(cuts); ++i)
    last = engine.forward(std::span(ids).subspan(cuts[i], cuts[i + 1] - cuts[i]));
  EXPECT_EQ(engine.position(), 70u);
  const auto golden = refs.f32("random.logits_last");
  EXPECT_LE(max_abs_diff(last.data(), golden.data(), golden.size()), 1e-3f);
}

TEST(CpuKvCache, RejectsTokensOutsideTheVocabulary) {
  GOLDENS_OR_SKIP();
  auto& engine = hf_engine();
  engine.reset();
  const uint32_t bad[] = {1, engine.vocab_size()};
  EXPECT_THROW(engine.forward(bad), std::out_of_range);
  EXPECT_EQ(engine.position(), 0u);
}

}  // namespace
}  // namespace gptoss::test

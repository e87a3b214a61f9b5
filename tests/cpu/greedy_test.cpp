// Greedy decoding through the KV cache reproduces transformers' greedy12 continuation wherever
// the golden's top-1/top-2 margin exceeds the engine's logit error.
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/cpu/engines.h"
#include "tests/cpu/golden_refs.h"
#include "tests/test_support.h"

namespace gptoss::test {
namespace {

// Two logits each within 1e-3 (the parity bound; measured < 1e-4) can swap order only when
// their golden margin is below 2e-3.
constexpr float kComparableMargin = 2e-3f;

uint32_t argmax(const std::vector<float>& logits) {
  return static_cast<uint32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

TEST(CpuGreedy, MatchesGoldenContinuationWhileMarginsAllow) {
  GOLDENS_OR_SKIP();
  GoldenRefs refs(*goldens);
  auto& engine = hf_engine();
  for (const auto& prompt : golden_prompts()) {
    SCOPED_TRACE(prompt);
    const auto golden = refs.i32(prompt + ".greedy12");
    const auto margins = refs.f32(prompt + ".greedy12_margin");
    engine.reset();
    auto logits = engine.forward(refs.ids(prompt));
    size_t compared = 0;
    for (size_t step = 0; step < golden.size(); ++step) {
      if (margins[step] <= kComparableMargin) break;  // beyond here the continuation may diverge
      const uint32_t token = argmax(logits);
      ASSERT_EQ(token, static_cast<uint32_t>(golden[step])) << "step " << step;
      ++compared;
      const uint32_t next[] = {token};
      logits = engine.forward(next);
    }
    EXPECT_EQ(compared, golden.size()) << "every golden margin of preset a exceeds " << kComparableMargin;
  }
}

}  // namespace
}  // namespace gptoss::test

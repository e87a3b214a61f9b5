// What gptoss-run shows of a harmony output stream: the final channel, optionally the analysis,
// or everything raw.
#include <gtest/gtest.h>

#include "convert/tokenizer_json.h"
#include "tests/test_support.h"
#include "tools/gptoss-run/token_display.h"

namespace gptoss::run {
namespace {

std::string show(const Tokenizer& tokenizer, DisplayMode mode, bool show_reasoning, const std::string& output) {
  TokenDisplay display(mode, &tokenizer, show_reasoning);
  std::string shown;
  for (uint32_t id : tokenizer.encode(output, /*allow_special=*/true)) shown += display.push(id);
  return shown + display.finish();
}

TEST(GptossRunDisplay, HarmonyShowsTheFinalChannelAndOnRequestTheAnalysis) {
  TOKENIZER_OR_SKIP();
  const Tokenizer tokenizer(*load_tokenizer_json(*tokenizer_json));
  // The prompt ended with "<|start|>assistant", so the output starts inside that header.
  const std::string output =
      "<|channel|>analysis<|message|>Two plus two.<|end|><|start|>assistant<|channel|>final<|message|>It is 4.<|return|>";
  EXPECT_EQ(show(tokenizer, DisplayMode::Harmony, false, output), "It is 4.");
  EXPECT_EQ(show(tokenizer, DisplayMode::Harmony, true, output), "[analysis]\nTwo plus two.\n[final]\nIt is 4.");
  EXPECT_EQ(show(tokenizer, DisplayMode::Raw, false, output), output);
}

TEST(GptossRunDisplay, IdsPastTheTokenizerShowAsNumbers) {
  TOKENIZER_OR_SKIP();
  const Tokenizer tokenizer(*load_tokenizer_json(*tokenizer_json));
  const uint32_t hi = tokenizer.encode("Hi")[0];
  const uint32_t padded = 201000;  // the model's vocabulary is padded past the tokenizer's
  ASSERT_GE(padded, tokenizer.vocab_size());
  const std::vector<uint32_t> ids = {hi, padded, hi};
  EXPECT_EQ(decode_for_display(tokenizer, ids), "Hi[201000]Hi");
  TokenDisplay display(DisplayMode::Raw, &tokenizer, false);
  std::string shown;
  for (uint32_t id : ids) shown += display.push(id);
  EXPECT_EQ(shown + display.finish(), "Hi[201000]Hi");
}

}  // namespace
}  // namespace gptoss::run

// The tokenizer against Hugging Face `tokenizers` (refs-a.json: tokenize, tokenize_special,
// decode) on the real o200k_harmony vocabulary.
#include <gtest/gtest.h>

#include "tests/test_support.h"
#include "tests/tokenizer/tokenizer_fixture.h"

namespace gptoss {
namespace {

std::vector<uint32_t> ids_of(const nlohmann::json& j) { return j.get<std::vector<uint32_t>>(); }

TEST(TokenizerGolden, TokenizeEqualsHuggingFace) {
  GOLDENS_OR_SKIP();
  REAL_TOKENIZER_OR_SKIP();
  const auto& cases = test::refs_a()["tokenize"];
  ASSERT_GE(cases.size(), 20u);
  for (const auto& c : cases) {
    const std::string text = c["text"].get<std::string>();
    EXPECT_EQ(tokenizer->encode(text, /*allow_special=*/true), ids_of(c["ids"])) << "text: " << text;
  }
}

TEST(TokenizerGolden, SpecialTokensInTextAreRecognised) {
  GOLDENS_OR_SKIP();
  REAL_TOKENIZER_OR_SKIP();
  const auto& cases = test::refs_a()["tokenize_special"];
  ASSERT_FALSE(cases.empty());
  for (const auto& c : cases) {
    const std::string text = c["text"].get<std::string>();
    EXPECT_EQ(tokenizer->encode(text, true), ids_of(c["ids"])) << "text: " << text;
  }
}

TEST(TokenizerGolden, DecodeEqualsHuggingFaceIncludingInvalidUtf8) {
  GOLDENS_OR_SKIP();
  REAL_TOKENIZER_OR_SKIP();
  const auto& cases = test::refs_a()["decode"];
  ASSERT_FALSE(cases.empty());
  for (const auto& c : cases) {
    const auto ids = ids_of(c["ids"]);
    EXPECT_EQ(tokenizer->decode_text(ids), c["text"].get<std::string>());
  }
}

TEST(TokenizerGolden, EncodeThenDecodeGivesTheTextBack) {
  GOLDENS_OR_SKIP();
  REAL_TOKENIZER_OR_SKIP();
  for (const auto& c : test::refs_a()["tokenize"]) {
    const std::string text = c["text"].get<std::string>();
    EXPECT_EQ(tokenizer->decode(tokenizer->encode(text, true)), text);
  }
}

TEST(TokenizerGolden, HarmonyPromptDecodesToTheRenderedConversation) {
  GOLDENS_OR_SKIP();
  REAL_TOKENIZER_OR_SKIP();
  const auto ids = ids_of(test::refs_a()["prompts"]["harmony"]);
  const std::string text = tokenizer->decode_text(ids);
  EXPECT_EQ(text, "<|start|>user<|message|>What is 2+2?<|end|><|start|>assistant");
  EXPECT_EQ(tokenizer->encode(text, true), ids);
}

TEST(TokenizerGolden, WithoutAllowSpecialSpecialsAreText) {
  REAL_TOKENIZER_OR_SKIP();
  const auto ids = tokenizer->encode("<|end|>", false);
  EXPECT_GT(ids.size(), 1u);
  for (uint32_t id : ids) EXPECT_FALSE(tokenizer->is_special(id));
  EXPECT_EQ(tokenizer->decode(ids), "<|end|>");
  EXPECT_EQ(tokenizer->encode("<|end|>", true), std::vector<uint32_t>{200007});
}

TEST(TokenizerGolden, SpecialIdsAndVocabulary) {
  REAL_TOKENIZER_OR_SKIP();
  EXPECT_EQ(tokenizer->vocab_size(), 200019u);
  EXPECT_EQ(tokenizer->merge_count(), 446189u);
  EXPECT_EQ(tokenizer->special_id("<|return|>"), 200002u);
  EXPECT_EQ(tokenizer->special_id("<|call|>"), 200012u);
  EXPECT_EQ(tokenizer->special_id("<|start|>"), 200006u);
  EXPECT_FALSE(tokenizer->special_id("hello").has_value());
  EXPECT_TRUE(tokenizer->is_special(200007));
  EXPECT_FALSE(tokenizer->is_special(12194));
  EXPECT_EQ(tokenizer->token_bytes(12194), "Hi");
  EXPECT_THROW(tokenizer->token_bytes(201087), std::out_of_range);
  const std::vector<uint32_t> out_of_range{5000000};
  EXPECT_THROW(tokenizer->decode(out_of_range), std::out_of_range);
}

}  // namespace
}  // namespace gptoss

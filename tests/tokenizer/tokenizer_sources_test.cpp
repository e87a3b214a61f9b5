// The same tokenizer whichever source its data came from: tokenizer.json (merges given), the same
// vocabulary with merges derived from ranks (what model.bin stores), and the golden model.bin and
// GGUF files themselves.
#include <gtest/gtest.h>

#include "convert/model_io.h"
#include "convert/tokenizer_merges.h"
#include "formats/core/error.h"
#include "runtime/tokenizer/o200k_pretokenizer.h"
#include "tests/test_support.h"
#include "tests/tokenizer/tokenizer_fixture.h"

namespace gptoss {
namespace {

TEST(TokenizerMerges, DerivedFromRanksEqualTokenizerJsonExactly) {
  REAL_TOKENIZER_OR_SKIP();
  const auto data = test::real_tokenizer_data();
  const auto derived = derive_merges_from_ranks(*data);
  ASSERT_EQ(derived.size(), 446189u);
  ASSERT_EQ(derived.size(), data->merges.size());
  size_t first_difference = derived.size();
  for (size_t i = 0; i < derived.size(); ++i)
    if (derived[i] != data->merges[i]) {
      first_difference = i;
      break;
    }
  EXPECT_EQ(first_difference, derived.size()) << "first differing merge index";
}

TEST(TokenizerMerges, SmallVocabulary) {
  TokenizerData data;
  for (const char* t : {"a", "b", "c", "ab", "bc", "abc"}) {
    data.tokens.push_back(t);
    data.types.push_back(TokenType::Normal);
  }
  data.tokens.push_back("<|end|>");
  data.types.push_back(TokenType::Control);
  const std::vector<std::pair<std::string, std::string>> expected{{"a", "b"}, {"b", "c"}, {"a", "bc"}, {"ab", "c"}};
  EXPECT_EQ(derive_merges_from_ranks(data), expected);
}

void expect_same_encodings(const Tokenizer& reference, const Tokenizer& other, const std::string& label) {
  const auto& refs = test::refs_a();
  if (!refs.is_null())
    for (const auto& c : refs["tokenize"]) {
      const std::string text = c["text"].get<std::string>();
      EXPECT_EQ(other.encode(text, true), reference.encode(text, true)) << label << ": " << text;
    }
  const std::string text = test::mixed_text(200000, 7);
  const auto expected = reference.encode(text, false);
  const auto got = other.encode(text, false);
  EXPECT_EQ(got.size(), expected.size()) << label;
  EXPECT_TRUE(got == expected) << label << ": mixed text encodes differently";
  EXPECT_EQ(other.decode(got), text) << label;
}

TEST(TokenizerSources, MergesDerivedFromRanksEncodeIdentically) {
  REAL_TOKENIZER_OR_SKIP();
  TokenizerData ranks_only = *test::real_tokenizer_data();
  ranks_only.merges.clear();
  const Tokenizer from_ranks(ranks_only);
  EXPECT_EQ(from_ranks.merge_count(), tokenizer->merge_count());
  expect_same_encodings(*tokenizer, from_ranks, "ranks only");
}

TEST(TokenizerSources, GoldenModelBinAndGgufEncodeIdentically) {
  GOLDENS_OR_SKIP();
  REAL_TOKENIZER_OR_SKIP();
  for (const char* file : {"model.bin", "model-q8_0.gguf"}) {
    const CanonicalModel model = load_model(*goldens / "a" / file);
    ASSERT_TRUE(model.tokenizer) << file;
    const Tokenizer other(*model.tokenizer);
    expect_same_encodings(*tokenizer, other, file);
    for (const char* special : {"<|start|>", "<|message|>", "<|end|>", "<|channel|>", "<|return|>", "<|call|>"})
      EXPECT_EQ(other.special_id(special), tokenizer->special_id(special)) << file << " " << special;
  }
}

TEST(TokenizerSources, RefusesAnotherPreTokenizer) {
  REAL_TOKENIZER_OR_SKIP();
  TokenizerData data = *test::real_tokenizer_data();
  data.pretokenizer_regex = "\\s+|\\w+";
  try {
    const Tokenizer t(data);
    FAIL() << "accepted a pre-tokenizer it does not implement";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.field(), "pretokenizer_regex");
  }
}

TEST(TokenizerSources, RefusesAVocabularyWithoutEveryByte) {
  TokenizerData data;
  data.pretokenizer_regex = std::string(kO200kPretokenizerRegex);
  data.tokens = {"a", "b"};
  data.types = {TokenType::Normal, TokenType::Normal};
  EXPECT_THROW(Tokenizer{data}, FormatError);
}

}  // namespace
}  // namespace gptoss

// The tokenizer.json reader: its split parse (model.vocab and model.merges taken out of the JSON
// stream) must accept what the DOM accepted and reject duplicates the DOM used to hide.
#include <gtest/gtest.h>

#include <string>

#include "convert/tokenizer_json.h"
#include "formats/core/error.h"
#include "tests/test_support.h"

namespace gptoss {
namespace {

// A valid byte-level BPE tokenizer.json with `vocab` and `merges` spliced in.
std::string tokenizer_text(const std::string& vocab, const std::string& merges = R"(["a b"])",
                           const std::string& extra = "") {
  return R"({"version":"1.0",)" + extra + R"("added_tokens":[{"id":3,"content":"<|return|>","special":true}],)" +
         R"("pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"\\s+"}}]},)" +
         R"("model":{"type":"BPE","vocab":)" + vocab + R"(,"merges":)" + merges + "}}";
}

FormatError error_of(const std::string& text) {
  try {
    (void)tokenizer_from_json_text(text, "t/tokenizer.json");
  } catch (const FormatError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for " << text;
  return FormatError("", "", std::nullopt, "");
}

TEST(TokenizerJson, ReadsVocabularyMergesAddedTokensAndRegex) {
  const auto tok = tokenizer_from_json_text(tokenizer_text(R"({"a":0,"b":1,"ab":2})", R"(["a b", ["ab", "a"]])"), "t");
  ASSERT_EQ(tok->tokens.size(), 4u);
  EXPECT_EQ(tok->tokens[0], "a");
  EXPECT_EQ(tok->tokens[2], "ab");
  EXPECT_EQ(tok->tokens[3], "<|return|>");
  EXPECT_EQ(tok->types[1], TokenType::Normal);
  EXPECT_EQ(tok->types[3], TokenType::Control);
  ASSERT_EQ(tok->merges.size(), 2u);
  EXPECT_EQ(tok->merges[0], (std::pair<std::string, std::string>{"a", "b"}));
  EXPECT_EQ(tok->merges[1], (std::pair<std::string, std::string>{"ab", "a"}));
  EXPECT_EQ(tok->pretokenizer_regex, "\\s+");
  EXPECT_EQ(tok->eos_id, 3u);
}

TEST(TokenizerJson, ByteLevelTextIsDecodedToBytes) {
  // "Ġ" is GPT-2's stand-in for the space byte, "Ċ" for newline.
  const auto tok = tokenizer_from_json_text(tokenizer_text(R"({"\u0120a":0,"\u010a":1,"a":2})", "[]"), "t");
  EXPECT_EQ(tok->tokens[0], " a");
  EXPECT_EQ(tok->tokens[1], "\n");
}

TEST(TokenizerJson, OtherKeysNamedVocabOrMergesAreNotTheModels) {
  // A "vocab" or "merges" key elsewhere (deeper, or outside "model") stays ordinary JSON.
  const auto tok = tokenizer_from_json_text(
      tokenizer_text(R"({"a":0,"b":1})", R"(["a b"])", R"("decoder":{"vocab":{"zz":7},"merges":[1,2]},)"), "t");
  EXPECT_EQ(tok->tokens.size(), 4u);
  EXPECT_EQ(tok->merges.size(), 1u);
}

TEST(TokenizerJson, ErrorsNameTheFieldAndTheFile) {
  struct Case {
    std::string text, field, message_part;
  };
  const Case cases[] = {
      {tokenizer_text(R"({"a":0,"a":1})"), "model.vocab", "\"a\" is listed twice"},
      {tokenizer_text(R"({"a":0,"b":0})"), "model.vocab", "id 0 is used twice"},
      {tokenizer_text(R"({"a":0,"b":"one"})"), "model.vocab.b", "integer below 2^24"},
      {tokenizer_text(R"({"a":0,"b":{"c":1}})"), "model.vocab.b", "integer below 2^24"},
      {tokenizer_text(R"({"a":0,"b":[1]})"), "model.vocab.b", "integer below 2^24"},
      {tokenizer_text(R"({"a":0,"b":16777216})"), "model.vocab.b", "integer below 2^24"},
      {tokenizer_text(R"({"a":0,"b":99999})"), "model.vocab", "dense"},
      {tokenizer_text(R"(["a"])"), "model.vocab", "missing or not an object"},
      {tokenizer_text(R"({"a":0}, "vocab":{"b":1})"), "model.vocab", "more than once"},
      {tokenizer_text(R"({"a":0})", R"(["ab"])"), "model.merges", "has no space"},
      {tokenizer_text(R"({"a":0})", R"([["a"]])"), "model.merges", "\"a b\" or"},
      {tokenizer_text(R"({"\u4e00":0})"), "model.vocab", "not byte-level BPE"},
      {R"({"model":{"type":"WordPiece","vocab":{}}})", "model.type", "byte-level BPE"},
      {R"({"model":[]})", "model", "no model object"},
      {R"([1,2])", "model", "no model object"},
      {tokenizer_text(R"({"a":0})").substr(0, 60), "", "invalid JSON"},
      {"", "", "invalid JSON"},
  };
  for (const auto& c : cases) {
    const FormatError e = error_of(c.text);
    EXPECT_EQ(e.file(), "t/tokenizer.json") << c.text;
    EXPECT_EQ(e.field(), c.field) << c.text << "\n" << e.what();
    EXPECT_NE(std::string(e.what()).find(c.message_part), std::string::npos) << c.text << "\n" << e.what();
  }
}

TEST(TokenizerJson, FileErrorsNameTheFile) {
  test::TempDir dir;
  try {
    (void)load_tokenizer_json(dir / "missing.json");
    FAIL() << "no error";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("missing.json"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("cannot open"), std::string::npos);
  }
}

}  // namespace
}  // namespace gptoss

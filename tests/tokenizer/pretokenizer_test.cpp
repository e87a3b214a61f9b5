// The o200k pre-tokenizer matcher, piece by piece, and the UTF-8 helpers under it. Expected
// splits follow the regex under leftmost-first semantics (worked out by hand per alternative).
#include <gtest/gtest.h>

#include "runtime/tokenizer/o200k_pretokenizer.h"
#include "runtime/tokenizer/unicode_class.h"
#include "runtime/tokenizer/utf8.h"

namespace gptoss {
namespace {

std::vector<std::string> split(std::string_view text) {
  std::vector<std::string> pieces;
  o200k_split(text, [&](std::string_view p) { pieces.emplace_back(p); });
  return pieces;
}

using Pieces = std::vector<std::string>;

TEST(O200kSplit, WordsTakeOneLeadingNonLetter) {
  EXPECT_EQ(split("Hello, world!"), (Pieces{"Hello", ",", " world", "!"}));
  EXPECT_EQ(split("  leading and trailing  "), (Pieces{" ", " leading", " and", " trailing", "  "}));
  EXPECT_EQ(split("tabs\tand"), (Pieces{"tabs", "\tand"}));
}

TEST(O200kSplit, CaseRunsSplitBeforeALowercaseTail) {
  EXPECT_EQ(split("CamelCaseWordsAndALLCAPS"), (Pieces{"Camel", "Case", "Words", "And", "ALLCAPS"}));
  EXPECT_EQ(split("HTTPServer"), (Pieces{"HTTPServer"}));  // [Upper]* then [Lower]+: "HTTPS" + "erver"
  EXPECT_EQ(split("ABC"), (Pieces{"ABC"}));
}

TEST(O200kSplit, ContractionsInAnyCase) {
  EXPECT_EQ(split("don't I'M we'll they've"), (Pieces{"don't", " I'M", " we'll", " they've"}));
  EXPECT_EQ(split("SHE'S IT'D YOU'RE X'LL"), (Pieces{"SHE'S", " IT'D", " YOU'RE", " X'LL"}));
  EXPECT_EQ(split("it'x"), (Pieces{"it", "'x"}));
  EXPECT_EQ(split("a'\u017F"), (Pieces{"a'\u017F"}));  // long s case-folds to s
}

TEST(O200kSplit, NumbersInThrees) {
  EXPECT_EQ(split("12345678901234"), (Pieces{"123", "456", "789", "012", "34"}));
  EXPECT_EQ(split("x1"), (Pieces{"x", "1"}));
  EXPECT_EQ(split("\u0663\u0664\u0665\u0666"), (Pieces{"\u0663\u0664\u0665", "\u0666"}));
}

TEST(O200kSplit, PunctuationTakesASpaceAndTrailingNewlinesOrSlashes) {
  EXPECT_EQ(split("a ... b"), (Pieces{"a", " ...", " b"}));
  EXPECT_EQ(split("x;\n\ny"), (Pieces{"x", ";\n\n", "y"}));
  EXPECT_EQ(split("https://a"), (Pieces{"https", "://", "a"}));
}

TEST(O200kSplit, WhitespaceAlternatives) {
  EXPECT_EQ(split("xxx\n\n\ny"), (Pieces{"xxx", "\n\n\n", "y"}));
  EXPECT_EQ(split("a  \n  b"), (Pieces{"a", "  \n", " ", " b"}));  // \s*[\r\n]+ stops after the newline
  EXPECT_EQ(split("a   b"), (Pieces{"a", "  ", " b"}));            // \s+(?!\S) leaves one space
  EXPECT_EQ(split("a   "), (Pieces{"a", "   "}));                   // ... except at the end
  EXPECT_EQ(split("\r\n\r\nx"), (Pieces{"\r\n\r\n", "x"}));
  EXPECT_EQ(split(std::string(130, ' ')), (Pieces{std::string(130, ' ')}));
  EXPECT_EQ(split("a \u00a0b"), (Pieces{"a", " ", "\u00a0b"}));
}

TEST(O200kSplit, MarksEmojiAndScripts) {
  EXPECT_EQ(split("e\u0301t\u00e9"), (Pieces{"e\u0301t\u00e9"}));
  EXPECT_EQ(split("\u0301abc"), (Pieces{"\u0301abc"}));
  EXPECT_EQ(split("emoji \U0001F44D\U0001F3FD x"), (Pieces{"emoji", " \U0001F44D\U0001F3FD", " x"}));
  EXPECT_EQ(split("\u65e5\u672c\u8a9e\u306e"), (Pieces{"\u65e5\u672c\u8a9e\u306e"}));
}

TEST(O200kSplit, InvalidUtf8IsSplitWithoutError) {
  const std::string bad = "ab\xff\xfe cd\xe2\x82";
  const auto pieces = split(bad);
  std::string joined;
  for (const auto& p : pieces) joined += p;
  EXPECT_EQ(joined, bad);
  EXPECT_EQ(pieces, (Pieces{"ab", "\xff\xfe", " cd", "\xe2\x82"}));
  EXPECT_TRUE(split("").empty());
}

TEST(UnicodeClasses, SpotChecks) {
  using unicode::PretokenClass;
  EXPECT_EQ(unicode::pretoken_class('A'), PretokenClass::Lu);
  EXPECT_EQ(unicode::pretoken_class('z'), PretokenClass::Ll);
  EXPECT_EQ(unicode::pretoken_class(0x01C5), PretokenClass::Lt);  // Dž
  EXPECT_EQ(unicode::pretoken_class(0x02B0), PretokenClass::Lm);
  EXPECT_EQ(unicode::pretoken_class(0x65E5), PretokenClass::Lo);
  EXPECT_EQ(unicode::pretoken_class(0x0301), PretokenClass::Mark);
  EXPECT_EQ(unicode::pretoken_class(0x2167), PretokenClass::Number);  // Roman numeral eight (Nl)
  EXPECT_EQ(unicode::pretoken_class(0x3000), PretokenClass::Space);
  EXPECT_EQ(unicode::pretoken_class(0x0085), PretokenClass::Space);
  EXPECT_EQ(unicode::pretoken_class(0x200B), PretokenClass::Other);  // zero width space is not \s
  EXPECT_EQ(unicode::pretoken_class(0x1F44D), PretokenClass::Other);
  EXPECT_EQ(unicode::pretoken_class(0x20000), PretokenClass::Lo);   // CJK extension B
  EXPECT_EQ(unicode::pretoken_class(0x1D7CE), PretokenClass::Number);
  EXPECT_EQ(unicode::pretoken_class(0x10FFFF), PretokenClass::Other);
  EXPECT_STREQ(unicode::kUnicodeVersion, "15.0.0");
}

TEST(Utf8, LossyReplacesMaximalSubparts) {
  EXPECT_EQ(utf8::to_valid_lossy("ok"), "ok");
  EXPECT_EQ(utf8::to_valid_lossy("\xe2\x82"), "\xEF\xBF\xBD");              // truncated: one U+FFFD
  EXPECT_EQ(utf8::to_valid_lossy("\xe0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong lead: two
  EXPECT_EQ(utf8::to_valid_lossy("\xed\xa0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(utf8::to_valid_lossy("\xf0\x9f\x98x"), "\xEF\xBF\xBDx");
  EXPECT_EQ(utf8::to_valid_lossy("\xc3\xa9\xff"), "\xc3\xa9\xEF\xBF\xBD");
}

TEST(Utf8, CompletePrefixHoldsBackOnlyAnUnfinishedCharacter) {
  EXPECT_EQ(utf8::complete_prefix_length("abc"), 3u);
  EXPECT_EQ(utf8::complete_prefix_length("ab\xf0\x9f\x98"), 2u);
  EXPECT_EQ(utf8::complete_prefix_length("ab\xf0\x9f\x98\x80"), 6u);
  EXPECT_EQ(utf8::complete_prefix_length("\xe2"), 0u);
  EXPECT_EQ(utf8::complete_prefix_length("a\xff"), 2u);  // never valid: not held back
}

}  // namespace
}  // namespace gptoss

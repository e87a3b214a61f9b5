// Streaming decode of generated ids, and the speed of a full pass over 1 MB of mixed text
// (printed, never asserted: timings do not decide pass or fail).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "runtime/tokenizer/utf8.h"
#include "tests/tokenizer/tokenizer_fixture.h"

namespace gptoss {
namespace {

bool utf8_is_whole(const std::string& s) { return utf8::to_valid_lossy(s) == s && utf8::complete_prefix_length(s) == s.size(); }

TEST(StreamingDecoder, EmitsWholeCharactersAndEqualsDecodeText) {
  REAL_TOKENIZER_OR_SKIP();
  const std::string text = test::mixed_text(20000, 3);
  const auto ids = tokenizer->encode(text);
  StreamingDecoder decoder(*tokenizer);
  std::string streamed;
  for (uint32_t id : ids) {
    const std::string piece = decoder.push(id);
    EXPECT_EQ(utf8_is_whole(piece), true);
    streamed += piece;
  }
  streamed += decoder.finish();
  EXPECT_EQ(streamed, text);
  // Partial tokens that never complete a character come out as U+FFFD, like decode_text.
  const std::vector<uint32_t> partial{12194, 94, 95};  // "Hi", then two lone non-ASCII bytes
  StreamingDecoder lossy(*tokenizer);
  std::string out;
  for (uint32_t id : partial) out += lossy.push(id);
  out += lossy.finish();
  EXPECT_EQ(out, tokenizer->decode_text(partial));
}

TEST(TokenizerSpeed, OneMegabyteOfMixedText) {
  REAL_TOKENIZER_OR_SKIP();
  const std::string text = test::mixed_text(1 << 20, 11);
  const auto started = std::chrono::steady_clock::now();
  const auto ids = tokenizer->encode(text);
  const auto encoded = std::chrono::steady_clock::now();
  const std::string back = tokenizer->decode(ids);
  const auto decoded = std::chrono::steady_clock::now();
  EXPECT_EQ(back, text);
  const auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  std::printf("[ timing ] encode %zu bytes -> %zu tokens: %.1f ms; decode: %.1f ms\n", text.size(), ids.size(),
              ms(started, encoded), ms(encoded, decoded));
  const auto again = std::chrono::steady_clock::now();
  tokenizer->encode(text);
  std::printf("[ timing ] second encode (warm piece cache): %.1f ms\n", ms(again, std::chrono::steady_clock::now()));
}

}  // namespace
}  // namespace gptoss

// Streaming decode of generated ids. (The speed of a full pass over 1 MiB of mixed text is
// measured by tests/tokenizer/bench/tokenizer_bench, which ctest does not run.)
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace gptoss

// tokenizer.json: tokenizer_from_json_text on the input (the parser that splits out the
// vocabulary and merges included), then the runtime
// Tokenizer built from the result, which must encode and decode a short text (a fixed one plus
// the input's first bytes) back to the same bytes, with and without special tokens.
#include <algorithm>

#include "convert/tokenizer_json.h"
#include "formats/core/error.h"
#include "fuzz/harness_support.h"
#include "runtime/tokenizer/tokenizer.h"

extern "C" int gptoss_fuzz_tokenizer_json(const uint8_t* data, size_t size) {
  using namespace gptoss;
  std::shared_ptr<TokenizerData> tokens;
  try {
    tokens = tokenizer_from_json_text({reinterpret_cast<const char*>(data), size}, "fuzz/tokenizer.json");
  } catch (const FormatError& e) {
    fuzz::note_rejected(e);
    return 0;
  }
  fuzz::require(tokens->types.size() == tokens->tokens.size(), "types and tokens differ in length");
  try {
    const Tokenizer tokenizer(*tokens);
    std::string text = "Hello world <|start|>user<|message|> 123 ...\n\xF0\x9F\x98\x80";
    text.append(reinterpret_cast<const char*>(data), std::min<size_t>(size, 64));
    for (bool allow_special : {false, true}) {
      const std::vector<uint32_t> ids = tokenizer.encode(text, allow_special);
      for (uint32_t id : ids) fuzz::require(id < tokenizer.vocab_size(), "encode produced an id outside the vocabulary");
      fuzz::require(tokenizer.decode(ids) == text, "decode(encode(text)) differs from text");
    }
  } catch (const FormatError& e) {
    fuzz::note_rejected(e);
  }
  return 0;
}

// Harmony output parsing and the o200k tokenizer. The first input byte picks the mode:
//   0, 1: the rest is a stream of little-endian u32 token ids (taken modulo vocab size + 64, so
//         ids past the tokenizer occur too) pushed into a harmony::StreamParser (mode 1: the
//         prompt ended with "<|start|>assistant"); it must never throw, whatever the stream.
//   2, 3: the rest is text encoded by the real tokenizer (mode 3 with special tokens), which
//         must decode back to the same bytes. Needs the real tokenizer.json; else skipped.
// The parser uses the real tokenizer when cached, else a byte-only one with the harmony specials.
#include <cstdio>

#include "convert/tokenizer_json.h"
#include "fuzz/harness_support.h"
#include "runtime/harmony/harmony_parser.h"
#include "runtime/tokenizer/tokenizer.h"
#include "tools/gptoss-badinputs/harmony_cases.h"

namespace {
using namespace gptoss;

struct LoadedTokenizer {
  std::unique_ptr<Tokenizer> tokenizer;
  bool real = false;
};

const LoadedTokenizer& loaded() {
  static const LoadedTokenizer instance = [] {
    LoadedTokenizer l;
    if (const auto path = fuzz::real_tokenizer_path(); !path.empty()) {
      l.tokenizer = std::make_unique<Tokenizer>(*load_tokenizer_json(path));
      l.real = true;
    } else {
      std::fprintf(stderr, "fuzz_harmony_parser: no real tokenizer.json; encode mode skipped\n");
      l.tokenizer = std::make_unique<Tokenizer>(harmony_byte_tokenizer());
    }
    return l;
  }();
  return instance;
}

void parse_stream(const Tokenizer& tokenizer, std::span<const uint8_t> bytes, bool prompt_opened_assistant) {
  harmony::StreamParser parser(tokenizer, prompt_opened_assistant ? std::optional<std::string>("assistant") : std::nullopt);
  const uint64_t id_range = tokenizer.vocab_size() + 64;
  size_t pushed = 0;
  for (size_t at = 0; at + 4 <= bytes.size(); at += 4) {
    const uint32_t id = static_cast<uint32_t>(load_u32(&bytes[at]) % id_range);
    const auto update = parser.push(id);
    ++pushed;
    fuzz::require(!update.stopped || parser.stopped(), "update says stopped but the parser is not");
  }
  parser.finish();
  fuzz::require(parser.tokens().size() <= pushed, "parser recorded more tokens than were pushed");
  for (const auto& message : parser.messages())
    fuzz::require(message.content_tokens.size() <= pushed, "message holds more tokens than were pushed");
  (void)parser.text_of_channel("final");
  (void)parser.text_of_channel("analysis");
}

void round_trip(const Tokenizer& tokenizer, std::span<const uint8_t> bytes, bool allow_special) {
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  const std::vector<uint32_t> ids = tokenizer.encode(text, allow_special);
  fuzz::require(ids.size() <= text.size(), "more tokens than bytes");
  fuzz::require(tokenizer.decode(ids) == text, "decode(encode(bytes)) differs from the bytes");
}
}  // namespace

extern "C" void gptoss_fuzz_harmony_parser_init() { (void)loaded(); }

extern "C" int gptoss_fuzz_harmony_parser(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const LoadedTokenizer& l = loaded();
  const std::span<const uint8_t> rest(data + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
    case 1:
      parse_stream(*l.tokenizer, rest, data[0] % 4 == 1);
      break;
    default:
      if (l.real) round_trip(*l.tokenizer, rest, data[0] % 4 == 3);
      break;
  }
  return 0;
}

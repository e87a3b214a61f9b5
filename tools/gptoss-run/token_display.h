#pragma once
// How gptoss-run shows generated tokens as they stream: raw text (every token, specials spelled
// out), the harmony final channel (optionally with the analysis channel), or bare ids when the
// model carries no usable tokenizer.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/harmony/harmony_parser.h"
#include "runtime/tokenizer/tokenizer.h"

namespace gptoss::run {

enum class DisplayMode { Raw, Harmony, Ids };

class TokenDisplay {
 public:
  // `tokenizer` may be null only with DisplayMode::Ids.
  TokenDisplay(DisplayMode mode, const Tokenizer* tokenizer, bool show_reasoning);

  // Text to print now for this token (maybe empty).
  std::string push(uint32_t id);
  std::string finish();

  // Harmony only: the final and analysis channels, and what the parser could not place.
  std::optional<harmony::StreamParser>& parser() { return parser_; }

 private:
  DisplayMode mode_;
  const Tokenizer* tokenizer_;
  bool show_reasoning_;
  std::optional<StreamingDecoder> decoder_;
  std::optional<harmony::StreamParser> parser_;
  std::optional<std::string> shown_channel_;
};

// The ids as text, ids the tokenizer does not have written as "[id]".
std::string decode_for_display(const Tokenizer& tokenizer, std::span<const uint32_t> ids);

}  // namespace gptoss::run

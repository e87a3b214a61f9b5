#include "tools/gptoss-run/token_display.h"

#include <stdexcept>

namespace gptoss::run {

TokenDisplay::TokenDisplay(DisplayMode mode, const Tokenizer* tokenizer, bool show_reasoning)
    : mode_(mode), tokenizer_(tokenizer), show_reasoning_(show_reasoning) {
  if (mode != DisplayMode::Ids && !tokenizer) throw std::invalid_argument("showing text needs a tokenizer");
  if (mode == DisplayMode::Raw) decoder_.emplace(*tokenizer);
  if (mode == DisplayMode::Harmony) parser_.emplace(*tokenizer);
}

std::string TokenDisplay::push(uint32_t id) {
  switch (mode_) {
    case DisplayMode::Ids: return "[" + std::to_string(id) + "]";
    case DisplayMode::Raw:
      // The model's vocabulary is padded past the tokenizer's (201088 vs 200019 for o200k
      // harmony): an id with no token text is shown as its number.
      if (id >= tokenizer_->vocab_size()) return decoder_->finish() + "[" + std::to_string(id) + "]";
      return decoder_->push(id);
    case DisplayMode::Harmony: break;
  }
  const auto update = parser_->push(id);
  if (update.content_delta.empty()) return {};
  const std::string channel = update.channel.value_or("final");
  if (channel == "final") {
    // With reasoning shown, label the switch so the answer stands apart from the analysis.
    std::string text = show_reasoning_ && shown_channel_ && *shown_channel_ != "final" ? "\n[final]\n" : "";
    shown_channel_ = channel;
    return text + update.content_delta;
  }
  if (!show_reasoning_) return {};
  std::string text = shown_channel_ != channel ? "[" + channel + "]\n" : "";
  shown_channel_ = channel;
  return text + update.content_delta;
}

std::string decode_for_display(const Tokenizer& tokenizer, std::span<const uint32_t> ids) {
  std::string text;
  size_t start = 0;
  for (size_t i = 0; i <= ids.size(); ++i) {
    if (i < ids.size() && ids[i] < tokenizer.vocab_size()) continue;
    text += tokenizer.decode_text(ids.subspan(start, i - start));
    if (i < ids.size()) text += "[" + std::to_string(ids[i]) + "]";
    start = i + 1;
  }
  return text;
}

std::string TokenDisplay::finish() {
  if (mode_ == DisplayMode::Raw) return decoder_->finish();
  if (mode_ == DisplayMode::Harmony) parser_->finish();
  return {};
}

}  // namespace gptoss::run

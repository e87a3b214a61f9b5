#include "runtime/harmony/harmony_parser.h"

#include <sstream>

namespace gptoss::harmony {

StreamParser::StreamParser(const Tokenizer& tokenizer, std::optional<std::string> prompt_ends_with_role)
    : tokenizer_(&tokenizer), state_(State::ExpectStart), decoder_(tokenizer) {
  start_ = tokenizer.special_id("<|start|>");
  end_ = tokenizer.special_id("<|end|>");
  message_ = tokenizer.special_id("<|message|>");
  channel_ = tokenizer.special_id("<|channel|>");
  constrain_ = tokenizer.special_id("<|constrain|>");
  return_ = tokenizer.special_id("<|return|>");
  call_ = tokenizer.special_id("<|call|>");
  if (prompt_ends_with_role) begin_header(prompt_ends_with_role);
}

std::vector<uint32_t> StreamParser::stop_tokens() const {
  std::vector<uint32_t> ids;
  if (return_) ids.push_back(*return_);
  if (call_) ids.push_back(*call_);
  return ids;
}

void StreamParser::problem(std::string what) {
  problems_.push_back("after " + std::to_string(tokens_.size()) + " tokens: " + std::move(what));
}

void StreamParser::begin_header(std::optional<std::string> implied_author) {
  state_ = State::Header;
  implied_author_ = std::move(implied_author);
  header_text_.clear();
  current_ = ParsedMessage();
  decoder_.reset();
}

// The header is "{role}[ to={recipient}]<|channel|>{channel}[ to={recipient}][ {content type}]",
// the recipient in either part; the role is left out when the prompt already gave it.
void StreamParser::parse_header() {
  std::string text = header_text_;
  std::string role_part = text, channel_part;
  bool has_channel = false;
  if (const size_t at = text.find("<|channel|>"); at != std::string::npos) {
    role_part = text.substr(0, at);
    channel_part = text.substr(at + 11);
    has_channel = true;
  }
  // <|constrain|> starts the content type even when not preceded by a space.
  for (std::string* part : {&role_part, &channel_part})
    for (size_t at = part->find("<|constrain|>"); at != std::string::npos; at = part->find("<|constrain|>", at + 14))
      part->insert(at, " ");
  const auto words = [](const std::string& s) {
    std::vector<std::string> out;
    std::istringstream in(s);
    for (std::string w; in >> w;) out.push_back(w);
    return out;
  };
  std::optional<std::string> author;
  for (const auto& w : words(role_part)) {
    if (w.starts_with("to=")) current_.recipient = w.substr(3);
    else if (!author) author = w;
    else problem("unexpected word \"" + w + "\" in the message header");
  }
  if (author && implied_author_) {
    problem("role \"" + *author + "\" written after the prompt already opened a \"" + *implied_author_ + "\" message");
  }
  current_.author = author ? *author : implied_author_.value_or("assistant");
  if (!author && !implied_author_) problem("message header names no role");
  std::vector<std::string> content_type;
  bool channel_named = false;
  for (const auto& w : words(channel_part)) {
    if (w.starts_with("to=")) current_.recipient = w.substr(3);
    else if (!channel_named) { current_.channel = w; channel_named = true; }
    else content_type.push_back(w);
  }
  if (has_channel && !channel_named) problem("<|channel|> without a channel name");
  if (!content_type.empty()) {
    std::string joined;
    for (const auto& w : content_type) joined += (joined.empty() ? "" : " ") + w;
    current_.content_type = joined;
  }
}

void StreamParser::close_message(std::string ended_by, Update& update) {
  const std::string tail = decoder_.finish();
  current_.content += tail;
  update.content_delta += tail;
  current_.ended_by = std::move(ended_by);
  messages_.push_back(std::move(current_));
  current_ = ParsedMessage();
  update.message_completed = true;
}

StreamParser::Update StreamParser::push(uint32_t id) {
  tokens_.push_back(id);
  Update update;
  const auto is = [id](const std::optional<uint32_t>& special) { return special && *special == id; };
  const bool stop = is(return_) || is(call_);
  std::string token_text;
  if (id >= tokenizer_->vocab_size()) {
    problem("id " + std::to_string(id) + " is outside the vocabulary; skipped");
    return update;
  }
  token_text = std::string(tokenizer_->token_bytes(id));

  if (state_ == State::Stopped) {
    problem("\"" + token_text + "\" after the stop token; a new message needs <|start|>");
    if (!is(start_)) return update;
    state_ = State::ExpectStart;
  }

  switch (state_) {
    case State::ExpectStart:
      if (is(start_)) {
        begin_header(std::nullopt);
      } else if (stop) {
        state_ = State::Stopped;
        update.stopped = true;
      } else if (is(channel_)) {
        // "<|end|><|channel|>..." : the model left out "<|start|>assistant"; keep going.
        problem("<|channel|> without <|start|>; taken as a new assistant message");
        begin_header("assistant");
        header_text_ = token_text;
      } else {
        problem("\"" + token_text + "\" outside any message; skipped");
      }
      break;

    case State::Header:
      if (is(message_)) {
        parse_header();
        state_ = State::Content;
        update.channel = current_.channel;
      } else if (is(start_)) {
        problem("<|start|> inside a message header; the header so far (\"" + header_text_ + "\") is dropped");
        begin_header(std::nullopt);
      } else if (is(end_) || stop) {
        problem("\"" + token_text + "\" ends a message that has no <|message|>");
        parse_header();
        update.channel = current_.channel;
        close_message(token_text, update);
        state_ = stop ? State::Stopped : State::ExpectStart;
        update.stopped = stop;
      } else {
        if (tokenizer_->is_special(id) && !is(channel_) && !is(constrain_))
          problem("unexpected \"" + token_text + "\" in a message header");
        header_text_ += token_text;
        if (header_text_.size() > 4096) {  // a header is a few words: this is not one
          problem("message header longer than 4096 bytes; dropped");
          header_text_.clear();
        }
      }
      break;

    case State::Content:
      update.channel = current_.channel;
      if (is(end_) || stop) {
        close_message(token_text, update);
        state_ = stop ? State::Stopped : State::ExpectStart;
        update.stopped = stop;
      } else if (is(start_)) {
        problem("<|start|> before the open message ended; that message is kept, cut off");
        close_message("", update);
        begin_header(std::nullopt);
      } else if (is(channel_)) {
        problem("<|channel|> inside message content; taken as a new assistant message");
        close_message("", update);
        begin_header("assistant");
        header_text_ = token_text;
      } else if (tokenizer_->is_special(id)) {
        problem("unexpected \"" + token_text + "\" inside message content; skipped");
      } else {
        current_.content_tokens.push_back(id);
        const std::string delta = decoder_.push(id);
        current_.content += delta;
        update.content_delta += delta;
      }
      break;

    case State::Stopped:
      break;
  }
  return update;
}

void StreamParser::finish() {
  Update ignored;
  if (state_ == State::Content) {
    close_message("", ignored);
    state_ = State::ExpectStart;
  } else if (state_ == State::Header && !header_text_.empty()) {
    problem("output ended inside a message header (\"" + header_text_ + "\")");
  }
}

std::string StreamParser::text_of_channel(const std::string& channel) const {
  std::string out;
  for (const auto& m : messages_)
    if (m.channel == channel) out += m.content;
  if (state_ == State::Content && current_.channel == channel) out += current_.content;
  return out;
}

}  // namespace gptoss::harmony

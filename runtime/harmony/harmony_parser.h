#pragma once
// Parses the model's output tokens, one at a time, into harmony messages and channels.
//
//   harmony::StreamParser parser(tokenizer);   // the prompt ended with "<|start|>assistant"
//   for each generated id:
//     auto update = parser.push(id);
//     if (update.channel == "final") std::cout << update.content_delta;
//     if (parser.stopped()) break;           // <|return|> or <|call|>
//   parser.finish();
//
// Never throws on what the model writes: anything out of place is skipped and described in
// problems(), so a caller can show it.
#include <optional>
#include <string>
#include <vector>

#include "runtime/tokenizer/tokenizer.h"

namespace gptoss::harmony {

struct ParsedMessage {
  std::string author = "assistant";  // the role, or a tool's name
  std::optional<std::string> recipient;
  std::optional<std::string> channel;
  std::optional<std::string> content_type;
  std::string content;  // decoded text (invalid UTF-8 as U+FFFD)
  std::vector<uint32_t> content_tokens;
  std::string ended_by;  // "<|end|>", "<|return|>", "<|call|>", or "" when cut off
};

class StreamParser {
 public:
  enum class State { ExpectStart, Header, Content, Stopped };

  struct Update {
    std::string content_delta;           // text added to the current message's content
    std::optional<std::string> channel;  // channel of the message the delta belongs to
    bool message_completed = false;      // a message ended with this token (see messages().back())
    bool stopped = false;                // this token was <|return|> or <|call|>
  };

  // prompt_ends_with_role: the prompt ended with "<|start|>{role}", so the output starts inside
  // that message's header (the usual case: role "assistant"). Empty: the output starts with
  // <|start|> itself.
  explicit StreamParser(const Tokenizer& tokenizer, std::optional<std::string> prompt_ends_with_role = "assistant");

  Update push(uint32_t id);
  // The end of generation without a stop token: a message still open is kept, marked cut off.
  void finish();

  State state() const { return state_; }
  bool stopped() const { return state_ == State::Stopped; }
  const std::vector<ParsedMessage>& messages() const { return messages_; }  // completed ones
  const ParsedMessage& current() const { return current_; }                // the open one
  const std::vector<std::string>& problems() const { return problems_; }
  const std::vector<uint32_t>& tokens() const { return tokens_; }
  // Stop token ids (<|return|>, <|call|>) for the sampler; the ones the vocabulary has.
  std::vector<uint32_t> stop_tokens() const;

  // Content of every completed or open message on that channel, concatenated.
  std::string text_of_channel(const std::string& channel) const;

 private:
  void begin_header(std::optional<std::string> implied_author);
  void parse_header();
  void close_message(std::string ended_by, Update& update);
  void problem(std::string what);

  const Tokenizer* tokenizer_;
  std::optional<uint32_t> start_, end_, message_, channel_, constrain_, return_, call_;
  State state_;
  std::optional<std::string> implied_author_;
  std::string header_text_;
  ParsedMessage current_;
  StreamingDecoder decoder_;
  std::vector<ParsedMessage> messages_;
  std::vector<std::string> problems_;
  std::vector<uint32_t> tokens_;
};

}  // namespace gptoss::harmony

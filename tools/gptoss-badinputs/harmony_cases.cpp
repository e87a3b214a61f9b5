#include "tools/gptoss-badinputs/harmony_cases.h"

#include <memory>

#include "formats/core/mapped_file.h"
#include "formats/core/error.h"
#include "runtime/harmony/harmony_parser.h"
#include "runtime/tokenizer/o200k_pretokenizer.h"
#include "runtime/tokenizer/tokenizer.h"

namespace gptoss {
namespace {

constexpr uint32_t kStart = 256, kEnd = 257, kMessage = 258, kChannel = 259, kConstrain = 260, kReturn = 261,
                   kCall = 262, kEndOfText = 263;

void put_ids(std::vector<uint8_t>& out, std::initializer_list<uint32_t> ids) {
  for (uint32_t id : ids)
    for (int shift = 0; shift < 32; shift += 8) out.push_back(static_cast<uint8_t>(id >> shift));
}
void put_text(std::vector<uint8_t>& out, const std::string& text) {
  for (unsigned char c : text) put_ids(out, {c});
}
// `id` repeated until the stream holds 256 ids.
std::vector<uint8_t> filled_with(std::vector<uint8_t> out, uint32_t id) {
  while (out.size() < 1024) put_ids(out, {id});
  return out;
}

const Tokenizer& tokenizer() {
  static const Tokenizer instance(harmony_byte_tokenizer());
  return instance;
}

}  // namespace

TokenizerData harmony_byte_tokenizer() {
  TokenizerData data;
  for (int b = 0; b < 256; ++b) {
    data.tokens.emplace_back(1, static_cast<char>(b));
    data.types.push_back(TokenType::Normal);
  }
  for (const char* special : {"<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|constrain|>", "<|return|>",
                              "<|call|>", "<|endoftext|>"}) {
    data.tokens.emplace_back(special);
    data.types.push_back(TokenType::Control);
  }
  data.pretokenizer_regex = std::string(kO200kPretokenizerRegex);
  return data;
}

std::vector<uint8_t> harmony_seed() {
  std::vector<uint8_t> out;
  put_ids(out, {kChannel});
  put_text(out, "analysis");
  put_ids(out, {kMessage});
  put_text(out, "Say hi.");
  put_ids(out, {kEnd, kStart});
  put_text(out, "assistant");
  put_ids(out, {kChannel});
  put_text(out, "final");
  put_ids(out, {kMessage});
  put_text(out, "Hi!");
  put_ids(out, {kReturn});
  return out;
}

std::vector<std::pair<std::string, std::vector<uint8_t>>> harmony_hostile() {
  std::vector<std::pair<std::string, std::vector<uint8_t>>> c;
  std::vector<uint8_t> opened;  // "<|channel|>final<|message|>": inside the content
  put_ids(opened, {kChannel});
  put_text(opened, "final");
  put_ids(opened, {kMessage});
  c.emplace_back("256 x <|start|>", filled_with({}, kStart));
  c.emplace_back("256 x <|end|>", filled_with({}, kEnd));
  c.emplace_back("256 x <|channel|>", filled_with({}, kChannel));
  c.emplace_back("256 x <|constrain|>", filled_with({}, kConstrain));
  c.emplace_back("256 x <|message|>", filled_with({}, kMessage));
  c.emplace_back("256 x <|endoftext|>", filled_with({}, kEndOfText));
  c.emplace_back("ids 2^32-1", filled_with({}, 0xFFFFFFFFu));
  c.emplace_back("ids just past the vocabulary", filled_with({}, 264));
  c.emplace_back("header of 256 ids without <|message|>", filled_with({}, 'a'));
  std::vector<uint8_t> recipient;
  put_text(recipient, " to=functions.");
  c.emplace_back("recipient of 240 bytes", filled_with(recipient, 'x'));
  c.emplace_back("content of invalid UTF-8 (0xFF)", filled_with(opened, 0xFF));
  c.emplace_back("content of lone continuation bytes", filled_with(opened, 0x80));
  std::vector<uint8_t> after_stop = opened;
  put_ids(after_stop, {kReturn});
  c.emplace_back("tokens after <|return|>", filled_with(after_stop, 'x'));
  std::vector<uint8_t> call_in_header;
  put_ids(call_in_header, {kCall});
  c.emplace_back("<|call|> in the header", filled_with(call_in_header, kEnd));
  std::vector<uint8_t> cycling;
  while (cycling.size() < 1024) put_ids(cycling, {kStart, kEnd, kMessage, kChannel, kConstrain, kReturn, kCall, kEndOfText});
  c.emplace_back("every special in turn", cycling);
  std::vector<uint8_t> role;
  put_ids(role, {kEnd, kStart});
  c.emplace_back("a second role after the prompt's", filled_with(role, 'u'));
  return c;
}

void read_harmony_stream(const std::vector<uint8_t>& bytes) {
  if (bytes.size() % 4 != 0)
    throw_format_error("harmony output", "token ids", bytes.size() / 4 * 4, "not a whole number of u32 token ids");
  harmony::StreamParser parser(tokenizer());
  for (size_t at = 0; at < bytes.size(); at += 4) (void)parser.push(load_u32(&bytes[at]));
  parser.finish();
  (void)parser.text_of_channel("final");
  if (!parser.problems().empty())
    throw_format_error("harmony output", "token ids", std::nullopt, parser.problems().front());
}

}  // namespace gptoss

#pragma once
// The o200k_harmony byte-level BPE tokenizer, built from a TokenizerData so that it behaves the
// same whichever file the data came from (tokenizer.json, GGUF keys, model.bin). Matches Hugging
// Face `tokenizers` (encode with add_special_tokens=False, decode without skipping specials).
//
//   Tokenizer tok(*load_tokenizer_json("tokenizer.json"));
//   std::vector<uint32_t> ids = tok.encode("<|start|>user<|message|>Hi<|end|>", /*allow_special=*/true);
//   std::string text = tok.decode_text(ids);
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "convert/tokenizer_data.h"

namespace gptoss {

class Tokenizer {
 public:
  // Checks the data: the pre-tokenizer regex must be the o200k pattern (kO200kPretokenizerRegex)
  // and every single byte must be a token. Without merges (model.bin stores ranks only), merges
  // are derived from the ranks = ids (convert/tokenizer_merges.h). Throws FormatError otherwise.
  explicit Tokenizer(const TokenizerData& data);
  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  // Text to ids. With allow_special, special tokens written in the text (e.g. "<|end|>") become
  // their ids (longest match first); without, they are encoded as ordinary text.
  std::vector<uint32_t> encode(std::string_view text, bool allow_special = false) const;
  void encode_ordinary_into(std::string_view text, std::vector<uint32_t>& out) const;

  // Ids to the raw bytes of the tokens (special tokens as their text). Throws std::out_of_range
  // for an id outside the vocabulary; unused ids decode to nothing.
  std::string decode(std::span<const uint32_t> ids) const;
  // The same as text: invalid UTF-8 replaced by U+FFFD per maximal subpart, as Hugging Face does.
  std::string decode_text(std::span<const uint32_t> ids) const;

  std::string_view token_bytes(uint32_t id) const;  // throws std::out_of_range
  size_t vocab_size() const;                        // ids 0 .. vocab_size()-1
  bool is_special(uint32_t id) const;
  std::optional<uint32_t> special_id(std::string_view text) const;  // e.g. "<|return|>"
  size_t merge_count() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Turns generated ids into text as it becomes complete UTF-8: a character split across tokens is
// held back until its last byte arrives; bytes that can never form a character come out as U+FFFD.
class StreamingDecoder {
 public:
  explicit StreamingDecoder(const Tokenizer& tokenizer) : tokenizer_(&tokenizer) {}
  std::string push(uint32_t id);  // text that is complete now (maybe empty)
  std::string finish();           // whatever is still held back, an incomplete tail as U+FFFD
  void reset() { pending_.clear(); }

 private:
  const Tokenizer* tokenizer_;
  std::string pending_;
};

}  // namespace gptoss

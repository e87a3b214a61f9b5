#pragma once
// TokenizerData to the Hugging Face tokenizer files of an o200k_harmony-style checkpoint:
// tokenizer.json (byte-level BPE: vocab in GPT-2 byte-to-unicode form by id, merges as pairs,
// added_tokens for the specials, the Split regex + ByteLevel pre-tokenizer, ByteLevel decoder)
// and tokenizer_config.json (added_tokens_decoder, bos/eos/pad, chat_template).
//
// The text is laid out as Hugging Face `tokenizers` serializes it (two-space indent, vocab sorted
// by id, no final newline): from the o200k_harmony data it reproduces the published
// tokenizer.json byte for byte.
#include <optional>
#include <string>

#include "convert/tokenizer_data.h"

namespace gptoss {

// Throws std::invalid_argument when the data cannot be written faithfully: no pre-tokenizer regex
// (the tokenization would change), or a token text that is not valid UTF-8 where JSON needs it.
// Normal and Byte ids go to model.vocab, Control (special) and UserDefined ids to added_tokens,
// Unused ids (GGUF's [PAD{id}] fillers) nowhere.
std::string tokenizer_json_text(const TokenizerData& tokenizer);

// tokenizer_config.json as transformers writes it (keys sorted). The chat template goes in when
// `include_chat_template` and the tokenizer has one.
std::string tokenizer_config_json_text(const TokenizerData& tokenizer, bool include_chat_template);

}  // namespace gptoss

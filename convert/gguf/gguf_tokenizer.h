#pragma once
// The tokenizer keys of a gpt-oss GGUF, as llama.cpp's converter writes them: tokens in GPT-2
// byte-to-unicode form (special tokens as their text), "[PAD{id}]" of type UNUSED for ids the
// tokenizer lacks, INT32 token types, merges "left right" in unicode form, u32 special ids.
#include <memory>
#include <string>
#include <vector>

#include "convert/tokenizer_data.h"
#include "formats/gguf/gguf_file.h"
#include "formats/gguf/gguf_writer.h"

namespace gptoss {

// The token texts and types written for `vocab_size` ids (exposed for tests).
struct GgufVocab {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
};
GgufVocab gguf_vocab(const TokenizerData& tokenizer, uint32_t vocab_size);

// tokenizer.ggml.model .. tokenizer.chat_template, in the converter's order.
void add_gguf_tokenizer(GgufMetadata& metadata, const TokenizerData& tokenizer, uint32_t vocab_size);

// nullptr when the file has no tokenizer.ggml.tokens; FormatError on malformed tokenizer keys.
std::shared_ptr<TokenizerData> gguf_tokenizer(const GgufFile& file);

}  // namespace gptoss

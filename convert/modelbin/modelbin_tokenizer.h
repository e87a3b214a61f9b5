#pragma once
// The model.bin tokenizer section <-> TokenizerData. The section is tiktoken o200k_base (199998
// text tokens as raw bytes, the pre-tokenizer regex) plus a table of 16 special-token UUIDs for
// ids 199998..200013; which UUID sits in which slot is fixed by OpenAI's writer
// (shared/specs/modelbin.md §2), so we emit that table, with <|message|> explicitly at slot 10.
#include <memory>
#include <string>
#include <vector>

#include "convert/tokenizer_data.h"
#include "formats/modelbin/modelbin_file.h"
#include "formats/modelbin/modelbin_writer.h"

namespace gptoss {

inline constexpr uint32_t kModelBinTextTokens = 199998;   // o200k_base ranks 0..199997
inline constexpr uint32_t kModelBinSpecialTokens = 16;    // ids 199998..200013
inline constexpr uint32_t kModelBinVocabulary = kModelBinTextTokens + kModelBinSpecialTokens;  // 200014

// tiktoken's o200k_base pat_str, byte for byte as OpenAI's writer stores it.
extern const char* const kO200kRegex;

// The 16 UUIDs OpenAI's writer emits (all-zero where it emits none).
const std::vector<modelbin::Uuid>& modelbin_special_token_table();

// Builds the section from `tokenizer`; the views point into `tokenizer`. Throws
// std::invalid_argument when the tokenizer is not o200k_harmony-shaped (too few text tokens, a
// special token among ids 0..199997, a harmony special at the wrong id). Appends notes.
modelbin::TokenizerSection modelbin_tokenizer_section(const TokenizerData& tokenizer, std::vector<std::string>& notes);

// Text tokens by id, specials named as in o200k_harmony (the UUID table is checked against what
// OpenAI's writer emits; differences go to `notes`). BPE merges are derived from the token ranks
// (tiktoken's merge order), so the result can be written as a tokenizer.json again.
std::shared_ptr<TokenizerData> tokenizer_from_modelbin(const modelbin::ModelBinFile& file, std::vector<std::string>& notes);

}  // namespace gptoss

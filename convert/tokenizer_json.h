#pragma once
// Hugging Face tokenizer.json (byte-level BPE, as o200k_harmony) to TokenizerData and back.
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "convert/tokenizer_data.h"

namespace gptoss {

// GPT-2's byte <-> printable-unicode mapping used by byte-level BPE vocabularies.
std::string bytes_to_gpt2_unicode(std::string_view raw);
std::optional<std::string> gpt2_unicode_to_bytes(std::string_view text);  // nullopt if not a mapped string

// The text of a tokenizer.json (`source` names it in errors); invalid JSON, a missing vocabulary,
// ids that are not dense, text that is not byte-level BPE, a token or id listed twice are
// FormatErrors.
std::shared_ptr<TokenizerData> tokenizer_from_json_text(std::string_view text, const std::string& source);
// The same from a file, parsed from its memory map.
std::shared_ptr<TokenizerData> load_tokenizer_json(const std::filesystem::path& path);

}  // namespace gptoss

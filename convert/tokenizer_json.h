#pragma once
// Hugging Face tokenizer.json (byte-level BPE, as o200k_harmony) to TokenizerData and back.
#include <filesystem>
#include <memory>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "convert/tokenizer_data.h"

namespace gptoss {

// GPT-2's byte <-> printable-unicode mapping used by byte-level BPE vocabularies.
std::string bytes_to_gpt2_unicode(std::string_view raw);
std::optional<std::string> gpt2_unicode_to_bytes(std::string_view text);  // nullopt if not a mapped string

std::shared_ptr<TokenizerData> tokenizer_from_json(const nlohmann::json& json, const std::string& source);
std::shared_ptr<TokenizerData> load_tokenizer_json(const std::filesystem::path& path);

}  // namespace gptoss

#pragma once
// The tokenizer as every format needs it: one raw byte string per token id, a type per id, BPE
// merges by rank, the pre-tokenizer regex and the special ids. Loaders exist for tokenizer.json,
// GGUF tokenizer keys and the model.bin tokenizer section; writers for GGUF and model.bin.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gptoss {

// The values are GGUF's token types.
enum class TokenType : int32_t { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

// The Hugging Face files a tokenizer was read from, so that a checkpoint writer can copy them
// byte for byte (keeping whatever they hold beyond TokenizerData) instead of regenerating them.
struct TokenizerSourceFiles {
  std::optional<std::filesystem::path> tokenizer_json;
  std::optional<std::filesystem::path> tokenizer_config;     // tokenizer_config.json beside it
  std::optional<std::filesystem::path> chat_template_jinja;  // chat_template.jinja beside it
};

struct TokenizerData {
  std::vector<std::string> tokens;  // raw bytes per id (special tokens: their text, e.g. "<|end|>")
  std::vector<TokenType> types;     // same length as tokens
  std::vector<std::pair<std::string, std::string>> merges;  // raw byte strings, in rank order
  std::string pretokenizer_regex;
  std::optional<uint32_t> bos_id, eos_id, pad_id;
  std::optional<std::string> chat_template;
  TokenizerSourceFiles source_files;  // empty unless read from a checkpoint's tokenizer files

  size_t size() const { return tokens.size(); }
  bool is_special(uint32_t id) const {
    return id < types.size() && (types[id] == TokenType::Control || types[id] == TokenType::UserDefined);
  }
  std::optional<uint32_t> find_special(std::string_view text) const;
};

}  // namespace gptoss

#pragma once
// Reading a JSON file (config.json, tokenizer.json, index.json, ...) into nlohmann::json.
#include <filesystem>

#include <nlohmann/json_fwd.hpp>

namespace gptoss {

// Parses the whole file from its memory map (nlohmann's contiguous-input lexer is several times
// faster than its istream one on the 27 MB tokenizer.json). A missing or unreadable file is a
// FormatError "cannot open", a syntax error "invalid JSON: ..." with the parser's byte position,
// and a file that shrinks while it is parsed the mapped file's own "file shrank" error.
nlohmann::json read_json_file(const std::filesystem::path& path);

}  // namespace gptoss

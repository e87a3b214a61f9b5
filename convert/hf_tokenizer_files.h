#pragma once
// The tokenizer files of a Hugging Face checkpoint folder: tokenizer.json, tokenizer_config.json
// (special tokens, the chat template) and chat_template.jinja (where recent checkpoints keep the
// template). Read into TokenizerData; written from it.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "convert/tokenizer_data.h"

namespace gptoss {

// tokenizer.json from `dir`, else from its parent (OpenAI's original/ folder sits below the HF
// files), with the chat template from tokenizer_config.json ("chat_template" string) or, when that
// has none, chat_template.jinja beside it. nullptr when neither folder has a tokenizer.json.
std::shared_ptr<TokenizerData> load_hf_tokenizer_files(const std::filesystem::path& dir);

// Writes tokenizer.json and tokenizer_config.json into `dir`, and chat_template.jinja when the
// tokenizer was read with one. Files the tokenizer was read from are copied byte for byte; the
// others are generated (tokenizer_json_writer.h), the chat template inside tokenizer_config.json.
// A tokenizer that cannot be written faithfully (unknown pre-tokenizer) gets a note instead.
void write_hf_tokenizer_files(const TokenizerData& tokenizer, const std::filesystem::path& dir,
                              std::vector<std::string>& notes);

}  // namespace gptoss

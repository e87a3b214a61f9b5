#include "convert/tokenizer_json_writer.h"

#include <stdexcept>
#include <string_view>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "convert/tokenizer_json.h"

namespace gptoss {
namespace {

// A JSON string literal; nlohmann escapes exactly what serde_json escapes (quote, backslash,
// control characters) and keeps other UTF-8 as is.
std::string quote(std::string_view text, const char* what) {
  try {
    return nlohmann::json(std::string(text)).dump();
  } catch (const nlohmann::json::exception&) {
    throw std::invalid_argument(std::string(what) + " is not valid UTF-8, which tokenizer.json cannot hold");
  }
}

bool in_vocab(TokenType type) { return type == TokenType::Normal || type == TokenType::Byte; }
bool is_added(TokenType type) { return type == TokenType::Control || type == TokenType::UserDefined; }

void append_added_tokens(std::string& out, const TokenizerData& tok) {
  bool first = true;
  for (uint32_t id = 0; id < tok.size(); ++id) {
    if (!is_added(tok.types[id])) continue;
    out += first ? "\n" : ",\n";
    first = false;
    out += "    {\n      \"id\": " + std::to_string(id) + ",\n      \"content\": " +
           quote(tok.tokens[id], ("special token " + std::to_string(id)).c_str()) +
           ",\n      \"single_word\": false,\n      \"lstrip\": false,\n      \"rstrip\": false,\n"
           "      \"normalized\": false,\n      \"special\": " +
           (tok.types[id] == TokenType::Control ? "true" : "false") + "\n    }";
  }
  out += first ? "]" : "\n  ]";
}

void append_vocab(std::string& out, const TokenizerData& tok) {
  std::unordered_set<std::string_view> seen;
  seen.reserve(tok.size());
  bool first = true;
  for (uint32_t id = 0; id < tok.size(); ++id) {
    if (!in_vocab(tok.types[id])) continue;
    // Two ids with one text would be one key in JSON: the second id would silently vanish.
    if (!seen.insert(tok.tokens[id]).second)
      throw std::invalid_argument("token " + std::to_string(id) + " repeats an earlier token's bytes");
    out += first ? "\n" : ",\n";
    first = false;
    out += "      " + quote(bytes_to_gpt2_unicode(tok.tokens[id]), "token") + ": " + std::to_string(id);
  }
  out += first ? "}" : "\n    }";
}

void append_merges(std::string& out, const TokenizerData& tok) {
  bool first = true;
  for (const auto& [left, right] : tok.merges) {
    out += first ? "\n" : ",\n";
    first = false;
    out += "      [\n        " + quote(bytes_to_gpt2_unicode(left), "merge") + ",\n        " +
           quote(bytes_to_gpt2_unicode(right), "merge") + "\n      ]";
  }
  out += first ? "]" : "\n    ]";
}
}  // namespace

std::string tokenizer_json_text(const TokenizerData& tok) {
  if (tok.types.size() != tok.tokens.size()) throw std::invalid_argument("tokenizer has a type count unlike its token count");
  if (tok.pretokenizer_regex.empty())
    throw std::invalid_argument("the tokenizer's pre-tokenizer regex is unknown, so a tokenizer.json would split text "
                                "differently");
  std::string out;
  out.reserve(64 * tok.size() + 48 * tok.merges.size());
  out += "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n  \"added_tokens\": [";
  append_added_tokens(out, tok);
  out += ",\n  \"normalizer\": null,\n"
         "  \"pre_tokenizer\": {\n    \"type\": \"Sequence\",\n    \"pretokenizers\": [\n      {\n"
         "        \"type\": \"Split\",\n        \"pattern\": {\n          \"Regex\": " +
         quote(tok.pretokenizer_regex, "the pre-tokenizer regex") +
         "\n        },\n        \"behavior\": \"Isolated\",\n        \"invert\": false\n      },\n      {\n"
         "        \"type\": \"ByteLevel\",\n        \"add_prefix_space\": false,\n        \"trim_offsets\": true,\n"
         "        \"use_regex\": false\n      }\n    ]\n  },\n"
         "  \"post_processor\": {\n    \"type\": \"ByteLevel\",\n    \"add_prefix_space\": true,\n"
         "    \"trim_offsets\": false,\n    \"use_regex\": true\n  },\n"
         "  \"decoder\": {\n    \"type\": \"ByteLevel\",\n    \"add_prefix_space\": true,\n    \"trim_offsets\": true,\n"
         "    \"use_regex\": true\n  },\n"
         "  \"model\": {\n    \"type\": \"BPE\",\n    \"dropout\": null,\n    \"unk_token\": null,\n"
         "    \"continuing_subword_prefix\": null,\n    \"end_of_word_suffix\": null,\n    \"fuse_unk\": false,\n"
         "    \"byte_fallback\": false,\n    \"ignore_merges\": true,\n    \"vocab\": {";
  append_vocab(out, tok);
  out += ",\n    \"merges\": [";
  append_merges(out, tok);
  out += "\n  }\n}";
  return out;
}

std::string tokenizer_config_json_text(const TokenizerData& tok, bool include_chat_template) {
  nlohmann::json config = nlohmann::json::object();  // std::map: sorted keys, as transformers writes them
  nlohmann::json decoder = nlohmann::json::object();
  for (uint32_t id = 0; id < tok.size(); ++id) {
    if (!is_added(tok.types[id])) continue;
    quote(tok.tokens[id], ("special token " + std::to_string(id)).c_str());  // UTF-8 check with a clear message
    decoder[std::to_string(id)] = {{"content", tok.tokens[id]}, {"lstrip", false},       {"normalized", false},
                                   {"rstrip", false},           {"single_word", false}, {"special", tok.types[id] == TokenType::Control}};
  }
  config["added_tokens_decoder"] = std::move(decoder);
  auto special_text = [&](const std::optional<uint32_t>& id) -> std::optional<std::string> {
    // A filler id (GGUF's [PAD{id}]) is no token of the written files.
    if (!id || *id >= tok.size() || tok.types[*id] == TokenType::Unused) return std::nullopt;
    return tok.tokens[*id];
  };
  if (auto t = special_text(tok.bos_id)) config["bos_token"] = *t;
  if (auto t = special_text(tok.eos_id)) config["eos_token"] = *t;
  if (auto t = special_text(tok.pad_id)) config["pad_token"] = *t;
  if (include_chat_template && tok.chat_template) {
    quote(*tok.chat_template, "the chat template");
    config["chat_template"] = *tok.chat_template;
  }
  config["clean_up_tokenization_spaces"] = false;
  config["extra_special_tokens"] = nlohmann::json::object();
  config["model_input_names"] = {"input_ids", "attention_mask"};
  config["model_max_length"] = 1e30;  // transformers' VERY_LARGE_INTEGER: no length limit of its own
  config["tokenizer_class"] = "PreTrainedTokenizerFast";
  return config.dump(2) + "\n";
}

}  // namespace gptoss

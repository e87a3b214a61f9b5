#include "convert/tokenizer_json.h"

#include <array>

#include <nlohmann/json.hpp>

#include "formats/core/error.h"
#include "formats/core/json_file.h"

namespace gptoss {
namespace {
using json = nlohmann::json;

// byte -> code point, as in GPT-2's bytes_to_unicode().
const std::array<uint32_t, 256>& byte_to_codepoint() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      t[b] = printable ? b : next++;
    }
    return t;
  }();
  return table;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}
}  // namespace

std::string bytes_to_gpt2_unicode(std::string_view raw) {
  std::string out;
  out.reserve(raw.size() * 2);
  for (unsigned char b : raw) append_utf8(out, byte_to_codepoint()[b]);
  return out;
}

std::optional<std::string> gpt2_unicode_to_bytes(std::string_view text) {
  static const std::array<int, 512> reverse = [] {
    std::array<int, 512> r{};
    r.fill(-1);
    for (int b = 0; b < 256; ++b) r[byte_to_codepoint()[b]] = b;
    return r;
  }();
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    uint32_t cp;
    size_t len;
    if (c < 0x80) { cp = c; len = 1; }
    else if ((c & 0xE0) == 0xC0 && i + 1 < text.size()) { cp = ((c & 0x1Fu) << 6) | (text[i + 1] & 0x3F); len = 2; }
    else return std::nullopt;  // every mapped code point is below U+0800
    if (cp >= reverse.size() || reverse[cp] < 0) return std::nullopt;
    out += static_cast<char>(reverse[cp]);
    i += len;
  }
  return out;
}

std::shared_ptr<TokenizerData> tokenizer_from_json(const json& j, const std::string& source) {
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object())
    throw_format_error(source, "model", std::nullopt, "tokenizer.json has no model object");
  const json& model = j["model"];
  if (model.value("type", std::string()) != "BPE")
    throw_format_error(source, "model.type", std::nullopt, "only byte-level BPE tokenizers are supported");
  if (!model.contains("vocab") || !model["vocab"].is_object())
    throw_format_error(source, "model.vocab", std::nullopt, "missing or not an object");
  auto tok = std::make_shared<TokenizerData>();
  constexpr uint64_t kMaxVocab = 1u << 24;
  uint64_t max_id = 0;
  for (auto it = model["vocab"].begin(); it != model["vocab"].end(); ++it) {
    if (!it.value().is_number_unsigned() || it.value().get<uint64_t>() >= kMaxVocab)
      throw_format_error(source, "model.vocab." + it.key(), std::nullopt, "token id must be an integer below 2^24");
    max_id = std::max<uint64_t>(max_id, it.value().get<uint64_t>() + 1);
  }
  if (j.contains("added_tokens") && j["added_tokens"].is_array())
    for (const auto& a : j["added_tokens"]) {
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_unsigned() || a["id"].get<uint64_t>() >= kMaxVocab ||
          !a.contains("content") || !a["content"].is_string())
        throw_format_error(source, "added_tokens", std::nullopt, "entry needs an integer id below 2^24 and a string content");
      max_id = std::max<uint64_t>(max_id, a["id"].get<uint64_t>() + 1);
    }
  // Ids are dense in every real tokenizer; a few listed tokens must not claim 2^24 slots.
  const uint64_t listed = model["vocab"].size() + (j.contains("added_tokens") && j["added_tokens"].is_array() ? j["added_tokens"].size() : 0);
  if (max_id > 2 * listed + 1024)
    throw_format_error(source, "model.vocab", std::nullopt,
                       "token ids reach " + std::to_string(max_id - 1) + " but only " + std::to_string(listed) +
                           " tokens are listed: ids must be (nearly) dense");
  tok->tokens.assign(max_id, std::string());
  tok->types.assign(max_id, TokenType::Unused);
  for (auto it = model["vocab"].begin(); it != model["vocab"].end(); ++it) {
    const uint64_t id = it.value().get<uint64_t>();
    auto raw = gpt2_unicode_to_bytes(it.key());
    if (!raw) throw_format_error(source, "model.vocab", std::nullopt, "token \"" + it.key() + "\" is not byte-level BPE text");
    if (tok->types[id] != TokenType::Unused)
      throw_format_error(source, "model.vocab", std::nullopt, "id " + std::to_string(id) + " is used twice");
    tok->tokens[id] = *raw;
    tok->types[id] = TokenType::Normal;
  }
  if (j.contains("added_tokens") && j["added_tokens"].is_array())
    for (const auto& a : j["added_tokens"]) {
      const uint64_t id = a["id"].get<uint64_t>();
      tok->tokens[id] = a["content"].get<std::string>();
      tok->types[id] = a.value("special", false) ? TokenType::Control : TokenType::UserDefined;
    }
  if (model.contains("merges") && model["merges"].is_array()) {
    tok->merges.reserve(model["merges"].size());
    for (const auto& m : model["merges"]) {
      std::string left, right;
      if (m.is_string()) {
        const std::string s = m.get<std::string>();
        const auto space = s.find(' ', 1);
        if (space == std::string::npos) throw_format_error(source, "model.merges", std::nullopt, "merge \"" + s + "\" has no space");
        left = s.substr(0, space);
        right = s.substr(space + 1);
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        left = m[0].get<std::string>();
        right = m[1].get<std::string>();
      } else {
        throw_format_error(source, "model.merges", std::nullopt, "merge must be \"a b\" or [\"a\", \"b\"]");
      }
      auto l = gpt2_unicode_to_bytes(left), r = gpt2_unicode_to_bytes(right);
      if (!l || !r) throw_format_error(source, "model.merges", std::nullopt, "merge is not byte-level BPE text");
      tok->merges.emplace_back(std::move(*l), std::move(*r));
    }
  }
  // The o200k pre-tokenizer: a Split with a regex inside a Sequence (or alone).
  std::function<void(const json&)> find_regex = [&](const json& node) {
    if (!node.is_object()) return;
    if (node.value("type", std::string()) == "Split" && node.contains("pattern") && node["pattern"].contains("Regex"))
      tok->pretokenizer_regex = node["pattern"]["Regex"].get<std::string>();
    if (node.contains("pretokenizers"))
      for (const auto& child : node["pretokenizers"]) find_regex(child);
  };
  if (j.contains("pre_tokenizer")) find_regex(j["pre_tokenizer"]);
  tok->bos_id = tok->find_special("<|startoftext|>");
  tok->eos_id = tok->find_special("<|return|>");
  tok->pad_id = tok->find_special("<|endoftext|>");
  return tok;
}

std::shared_ptr<TokenizerData> load_tokenizer_json(const std::filesystem::path& path) {
  const json j = read_json_file(path);
  try {
    return tokenizer_from_json(j, path.string());
  } catch (const json::exception& e) {  // a value of the wrong JSON type deep inside
    throw_format_error(path.string(), "", std::nullopt, std::string("unexpected JSON value: ") + e.what());
  }
}

}  // namespace gptoss

#include "convert/tokenizer_json.h"

#include <algorithm>
#include <array>
#include <functional>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/core/error.h"
#include "formats/core/mapped_file.h"

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

namespace {

// tokenizer.json split while it is parsed: the 200k-entry model.vocab object and the 446k-entry
// model.merges array go straight into flat vectors instead of nlohmann's DOM (a std::map node
// per token, most of the load time); everything else stays in `rest`.
struct TokenizerJsonParts {
  json rest;
  std::vector<std::pair<std::string, json>> vocab;  // (token text, id) in file order
  std::vector<json> merges;                           // "a b" strings or ["a", "b"] pairs
  int vocab_objects = 0;                              // model.vocab seen as an object (0, 1, or a duplicate)
  int merges_arrays = 0;
};

TokenizerJsonParts parse_tokenizer_json(std::string_view text, const std::string& source) {
  TokenizerJsonParts parts;
  // One frame per open container: its kind and the key it was stored under ("" in arrays).
  struct Frame {
    bool object;
    std::string key;
  };
  std::vector<Frame> open;
  std::string pending_key;
  // open = [root, model, vocab|merges]: the container whose children we take over.
  auto capture = [&](const char* name, bool object) {
    return open.size() == 3 && open[0].object && open[1].object && open[1].key == "model" && open[2].object == object &&
           open[2].key == name;
  };
  // nlohmann reports no end event for a container it discards, so `open` is resynchronised from
  // the depth every event carries (the number of containers open around it).
  auto sync = [&](int depth) {
    if (depth >= 0 && open.size() > static_cast<size_t>(depth)) open.resize(static_cast<size_t>(depth));
  };
  json::parser_callback_t split = [&](int depth, json::parse_event_t event, json& parsed) -> bool {
    using E = json::parse_event_t;
    switch (event) {
      case E::key:  // refused inside model.vocab: nlohmann would insert it into a map first
        sync(depth);
        pending_key = parsed.get<std::string>();
        return !capture("vocab", true);
      case E::object_start:
      case E::array_start: {
        sync(depth);
        // An object or array where a token id belongs (its key was refused, so nlohmann drops
        // it): keep a non-integer stand-in so that the id check names the token.
        if (capture("vocab", true)) parts.vocab.emplace_back(pending_key, json::array());
        const bool in_object = !open.empty() && open.back().object;
        open.push_back({event == E::object_start, in_object ? pending_key : std::string()});
        if (capture("vocab", true)) ++parts.vocab_objects;
        if (capture("merges", false)) ++parts.merges_arrays;
        return true;
      }
      case E::object_end:
      case E::array_end:
        sync(depth + 1);
        if (!open.empty()) open.pop_back();
        // The finished container is a value of its parent: a ["a", "b"] merge is taken over.
        if (capture("merges", false)) {
          parts.merges.push_back(std::move(parsed));
          return false;
        }
        return true;
      case E::value:
        sync(depth);
        if (capture("vocab", true)) {
          parts.vocab.emplace_back(std::move(pending_key), std::move(parsed));
          return false;
        }
        if (capture("merges", false)) {
          parts.merges.push_back(std::move(parsed));
          return false;
        }
        return true;
    }
    return true;
  };
  try {
    parts.rest = json::parse(text.begin(), text.end(), split);
  } catch (const json::exception& e) {
    throw_format_error(source, "", std::nullopt, std::string("invalid JSON: ") + e.what());
  }
  if (parts.vocab_objects > 1 || parts.merges_arrays > 1)
    throw_format_error(source, parts.vocab_objects > 1 ? "model.vocab" : "model.merges", std::nullopt,
                       "appears more than once");
  return parts;
}

std::shared_ptr<TokenizerData> tokenizer_from_parts(const TokenizerJsonParts& parts, const std::string& source) {
  const json& j = parts.rest;
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object())
    throw_format_error(source, "model", std::nullopt, "tokenizer.json has no model object");
  const json& model = j["model"];
  if (model.value("type", std::string()) != "BPE")
    throw_format_error(source, "model.type", std::nullopt, "only byte-level BPE tokenizers are supported");
  if (parts.vocab_objects != 1) throw_format_error(source, "model.vocab", std::nullopt, "missing or not an object");
  auto tok = std::make_shared<TokenizerData>();
  constexpr uint64_t kMaxVocab = 1u << 24;
  uint64_t max_id = 0;
  for (const auto& [text, id] : parts.vocab) {
    if (!id.is_number_unsigned() || id.get<uint64_t>() >= kMaxVocab)
      throw_format_error(source, "model.vocab." + text, std::nullopt, "token id must be an integer below 2^24");
    max_id = std::max<uint64_t>(max_id, id.get<uint64_t>() + 1);
  }
  const bool has_added = j.contains("added_tokens") && j["added_tokens"].is_array();
  if (has_added)
    for (const auto& a : j["added_tokens"]) {
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_unsigned() || a["id"].get<uint64_t>() >= kMaxVocab ||
          !a.contains("content") || !a["content"].is_string())
        throw_format_error(source, "added_tokens", std::nullopt, "entry needs an integer id below 2^24 and a string content");
      max_id = std::max<uint64_t>(max_id, a["id"].get<uint64_t>() + 1);
    }
  // Ids are dense in every real tokenizer; a few listed tokens must not claim 2^24 slots.
  const uint64_t listed = parts.vocab.size() + (has_added ? j["added_tokens"].size() : 0);
  if (max_id > 2 * listed + 1024)
    throw_format_error(source, "model.vocab", std::nullopt,
                       "token ids reach " + std::to_string(max_id - 1) + " but only " + std::to_string(listed) +
                           " tokens are listed: ids must be (nearly) dense");
  tok->tokens.assign(max_id, std::string());
  tok->types.assign(max_id, TokenType::Unused);
  for (const auto& [text, id_value] : parts.vocab) {
    const uint64_t id = id_value.get<uint64_t>();
    auto raw = gpt2_unicode_to_bytes(text);
    if (!raw) throw_format_error(source, "model.vocab", std::nullopt, "token \"" + text + "\" is not byte-level BPE text");
    if (tok->types[id] != TokenType::Unused)
      throw_format_error(source, "model.vocab", std::nullopt, "id " + std::to_string(id) + " is used twice");
    tok->tokens[id] = std::move(*raw);
    tok->types[id] = TokenType::Normal;
  }
  {  // a JSON object with one key twice: the DOM would keep the last silently; a vocabulary must not
    std::vector<std::string_view> texts;
    texts.reserve(parts.vocab.size());
    for (const auto& entry : parts.vocab) texts.push_back(entry.first);
    std::sort(texts.begin(), texts.end());
    const auto twice = std::adjacent_find(texts.begin(), texts.end());
    if (twice != texts.end())
      throw_format_error(source, "model.vocab", std::nullopt, "token \"" + std::string(*twice) + "\" is listed twice");
  }
  if (has_added)
    for (const auto& a : j["added_tokens"]) {
      const uint64_t id = a["id"].get<uint64_t>();
      tok->tokens[id] = a["content"].get<std::string>();
      tok->types[id] = a.value("special", false) ? TokenType::Control : TokenType::UserDefined;
    }
  tok->merges.reserve(parts.merges.size());
  for (const auto& m : parts.merges) {
    std::string_view left, right;
    if (m.is_string()) {
      const std::string& s = m.get_ref<const std::string&>();
      const auto space = s.find(' ', 1);
      if (space == std::string::npos) throw_format_error(source, "model.merges", std::nullopt, "merge \"" + s + "\" has no space");
      left = std::string_view(s).substr(0, space);
      right = std::string_view(s).substr(space + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      left = m[0].get_ref<const std::string&>();
      right = m[1].get_ref<const std::string&>();
    } else {
      throw_format_error(source, "model.merges", std::nullopt, "merge must be \"a b\" or [\"a\", \"b\"]");
    }
    auto l = gpt2_unicode_to_bytes(left), r = gpt2_unicode_to_bytes(right);
    if (!l || !r) throw_format_error(source, "model.merges", std::nullopt, "merge is not byte-level BPE text");
    tok->merges.emplace_back(std::move(*l), std::move(*r));
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

}  // namespace

std::shared_ptr<TokenizerData> tokenizer_from_json_text(std::string_view text, const std::string& source) {
  const TokenizerJsonParts parts = parse_tokenizer_json(text, source);
  try {
    return tokenizer_from_parts(parts, source);
  } catch (const json::exception& e) {  // a value of the wrong JSON type deep inside
    throw_format_error(source, "", std::nullopt, std::string("unexpected JSON value: ") + e.what());
  }
}

std::shared_ptr<TokenizerData> load_tokenizer_json(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw_format_error(path.string(), "", std::nullopt, "cannot open");
  const auto file = MappedFile::open(path);
  const auto bytes = file->bytes();
  std::shared_ptr<TokenizerData> tokenizer;
  try {
    tokenizer = tokenizer_from_json_text({reinterpret_cast<const char*>(bytes.data()), bytes.size()}, path.string());
  } catch (const FormatError&) {
    file->check_intact();  // a file cut short under us says so, rather than "invalid JSON"
    throw;
  }
  file->check_intact();
  return tokenizer;
}

}  // namespace gptoss

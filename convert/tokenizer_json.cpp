#include "convert/tokenizer_json.h"

#include <algorithm>
#include <array>
#include <functional>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/core/error.h"
#include "formats/core/json_value.h"
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

// Every value outside the streamed vocabulary and merges goes through JsonValue; those two are
// checked in their hot loops with the same rules, a JsonValue made only to report a bad one.
std::shared_ptr<TokenizerData> tokenizer_from_parts(const TokenizerJsonParts& parts, const std::string& source) {
  const JsonValue root(parts.rest, source);
  std::optional<JsonValue> model;
  if (root.is_object()) model = root.find("model");
  if (!model || !model->is_object()) root.named("model").fail("tokenizer.json has no model object");
  const JsonValue type = model->at("type");
  if (type.as_string() != "BPE")
    type.fail("only byte-level BPE tokenizers are supported, found " + json_quoted(type.as_string()));
  if (parts.vocab_objects != 1) model->named("model.vocab").fail("missing or not an object");
  auto tok = std::make_shared<TokenizerData>();
  constexpr uint64_t kMaxVocab = 1u << 24;
  auto token_id = [&](const json& id, std::string_view text) {
    if (const auto v = JsonValue::uint_within(id, kMaxVocab - 1)) return *v;
    return JsonValue(id, source, std::nullopt, "model.vocab." + std::string(text)).as_uint(kMaxVocab - 1);  // throws
  };
  uint64_t max_id = 0;
  for (const auto& [text, id] : parts.vocab) max_id = std::max<uint64_t>(max_id, token_id(id, text) + 1);
  struct AddedToken {
    uint64_t id;
    const std::string* content;
    bool special;
  };
  std::vector<AddedToken> added;
  if (const auto list = root.find("added_tokens"))
    for (const JsonValue& a : list->elements()) {
      added.push_back({a.at("id").as_uint(kMaxVocab - 1), &a.at("content").as_string(), a.get_or<bool>("special", false)});
      max_id = std::max<uint64_t>(max_id, added.back().id + 1);
    }
  // Ids are dense in every real tokenizer; a few listed tokens must not claim 2^24 slots.
  const uint64_t listed = parts.vocab.size() + added.size();
  if (max_id > 2 * listed + 1024)
    model->named("model.vocab").fail("token ids reach " + std::to_string(max_id - 1) + " but only " +
                                     std::to_string(listed) + " tokens are listed: ids must be (nearly) dense");
  tok->tokens.assign(max_id, std::string());
  tok->types.assign(max_id, TokenType::Unused);
  for (const auto& [text, id_value] : parts.vocab) {
    const uint64_t id = token_id(id_value, text);
    auto raw = gpt2_unicode_to_bytes(text);
    if (!raw) model->named("model.vocab").fail("token " + json_quoted(text) + " is not byte-level BPE text");
    if (tok->types[id] != TokenType::Unused)
      model->named("model.vocab").fail("id " + std::to_string(id) + " is used twice");
    tok->tokens[id] = std::move(*raw);
    tok->types[id] = TokenType::Normal;
  }
  {  // a JSON object with one key twice: the DOM would keep the last silently; a vocabulary must not
    std::vector<std::string_view> texts;
    texts.reserve(parts.vocab.size());
    for (const auto& entry : parts.vocab) texts.push_back(entry.first);
    std::sort(texts.begin(), texts.end());
    const auto twice = std::adjacent_find(texts.begin(), texts.end());
    if (twice != texts.end()) model->named("model.vocab").fail("token " + json_quoted(*twice) + " is listed twice");
  }
  for (const AddedToken& a : added) {
    tok->tokens[a.id] = *a.content;
    tok->types[a.id] = a.special ? TokenType::Control : TokenType::UserDefined;
  }
  tok->merges.reserve(parts.merges.size());
  for (size_t i = 0; i < parts.merges.size(); ++i) {
    const json& m = parts.merges[i];
    auto bad_merge = [&](const std::string& what) {
      JsonValue(m, source, std::nullopt, "model.merges").fail("merge " + std::to_string(i) + " " + what);
    };
    std::string_view left, right;
    if (m.is_string()) {
      const std::string& s = m.get_ref<const std::string&>();
      const auto space = s.find(' ', 1);
      if (space == std::string::npos) bad_merge(json_quoted(s) + " has no space");
      left = std::string_view(s).substr(0, space);
      right = std::string_view(s).substr(space + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      left = m[0].get_ref<const std::string&>();
      right = m[1].get_ref<const std::string&>();
    } else {
      bad_merge("must be \"a b\" or [\"a\", \"b\"], found " + describe_json_value(m));
    }
    auto l = gpt2_unicode_to_bytes(left), r = gpt2_unicode_to_bytes(right);
    if (!l || !r) bad_merge("is not byte-level BPE text");
    tok->merges.emplace_back(std::move(*l), std::move(*r));
  }
  // The o200k pre-tokenizer: a Split with a regex inside a Sequence (or alone). Other shapes of
  // this optional tree are ignored, as before.
  std::function<void(const JsonValue&)> find_regex = [&](const JsonValue& node) {
    if (!node.is_object()) return;
    if (node.get_or<std::string>("type", "") == "Split")
      if (const auto pattern = node.find("pattern"); pattern && pattern->is_object() && pattern->has("Regex"))
        tok->pretokenizer_regex = pattern->get<std::string>("Regex");
    if (const auto children = node.find("pretokenizers"); children && children->is_array())
      for (const JsonValue& child : children->elements()) find_regex(child);
  };
  if (const auto pre = root.find("pre_tokenizer")) find_regex(*pre);
  tok->bos_id = tok->find_special("<|startoftext|>");
  tok->eos_id = tok->find_special("<|return|>");
  tok->pad_id = tok->find_special("<|endoftext|>");
  return tok;
}

}  // namespace

std::shared_ptr<TokenizerData> tokenizer_from_json_text(std::string_view text, const std::string& source) {
  return tokenizer_from_parts(parse_tokenizer_json(text, source), source);
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

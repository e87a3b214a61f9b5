#include "convert/gguf/gguf_tokenizer.h"

#include "convert/tokenizer_json.h"
#include "formats/core/error.h"

namespace gptoss {
namespace {
// The o200k pre-tokenizer, which llama.cpp selects for pre = "gpt-4o" (GGUF stores only the name).
constexpr const char* kO200kRegex =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// llama.cpp's converter marks an added token CONTROL when it is special or looks special (<|...|>).
bool looks_special(const std::string& text) {
  return text.size() >= 4 && text.compare(0, 2, "<|") == 0 && text.compare(text.size() - 2, 2, "|>") == 0;
}

std::string pad_token(uint32_t id) { return "[PAD" + std::to_string(id) + "]"; }
}  // namespace

GgufVocab gguf_vocab(const TokenizerData& tok, uint32_t vocab_size) {
  GgufVocab v;
  v.tokens.reserve(vocab_size);
  v.types.reserve(vocab_size);
  for (uint32_t id = 0; id < vocab_size; ++id) {
    const TokenType type = id < tok.size() ? tok.types[id] : TokenType::Unused;
    switch (type) {
      case TokenType::Unused:
        v.tokens.push_back(id < tok.size() && !tok.tokens[id].empty() ? tok.tokens[id] : pad_token(id));
        break;
      case TokenType::Control:
      case TokenType::UserDefined:
        v.tokens.push_back(tok.tokens[id]);  // special tokens keep their text
        break;
      default:
        v.tokens.push_back(bytes_to_gpt2_unicode(tok.tokens[id]));
    }
    TokenType written = type;
    if (type == TokenType::UserDefined && looks_special(tok.tokens[id])) written = TokenType::Control;
    v.types.push_back(static_cast<int32_t>(written));
  }
  return v;
}

void add_gguf_tokenizer(GgufMetadata& md, const TokenizerData& tok, uint32_t vocab_size) {
  md.add_string("tokenizer.ggml.model", "gpt2");
  md.add_string("tokenizer.ggml.pre", "gpt-4o");
  GgufVocab v = gguf_vocab(tok, vocab_size);
  md.add_string_array("tokenizer.ggml.tokens", v.tokens);
  md.add_i32_array("tokenizer.ggml.token_type", v.types);
  std::vector<std::string> merges;
  merges.reserve(tok.merges.size());
  for (const auto& [left, right] : tok.merges) merges.push_back(bytes_to_gpt2_unicode(left) + " " + bytes_to_gpt2_unicode(right));
  if (!merges.empty()) md.add_string_array("tokenizer.ggml.merges", merges);
  if (tok.bos_id) md.add_u32("tokenizer.ggml.bos_token_id", *tok.bos_id);
  if (tok.eos_id) md.add_u32("tokenizer.ggml.eos_token_id", *tok.eos_id);
  if (tok.pad_id) md.add_u32("tokenizer.ggml.padding_token_id", *tok.pad_id);
  if (tok.chat_template) md.add_string("tokenizer.chat_template", *tok.chat_template);
}

std::shared_ptr<TokenizerData> gguf_tokenizer(const GgufFile& f) {
  const GgufValue* tokens = f.optional("tokenizer.ggml.tokens", GgufType::Array);
  if (!tokens) return nullptr;
  const GgufKv* tokens_kv = f.find("tokenizer.ggml.tokens");
  if (tokens->element_type != GgufType::String)
    f.fail("tokenizer.ggml.tokens", tokens_kv->offset, "must be an array of STRING");
  const GgufValue& model = f.require("tokenizer.ggml.model", GgufType::String);
  if (model.string != "gpt2")
    f.fail("tokenizer.ggml.model", f.find("tokenizer.ggml.model")->offset,
           "only byte-level BPE (\"gpt2\") tokenizers are supported, found \"" + std::string(model.string) + "\"");
  const GgufValue* types = f.optional("tokenizer.ggml.token_type", GgufType::Array);
  if (types && (types->element_type != GgufType::I32 || types->count != tokens->count))
    f.fail("tokenizer.ggml.token_type", f.find("tokenizer.ggml.token_type")->offset,
           "must be an INT32 array with one entry per token (" + std::to_string(tokens->count) + ")");

  auto tok = std::make_shared<TokenizerData>();
  tok->tokens.reserve(tokens->count);
  tok->types.reserve(tokens->count);
  for (uint64_t id = 0; id < tokens->count; ++id) {
    const int32_t raw_type = types ? static_cast<int32_t>(types->element_bits(id)) : 1;
    if (raw_type < 1 || raw_type > 6)
      f.fail("tokenizer.ggml.token_type", f.find("tokenizer.ggml.token_type")->offset,
             "token " + std::to_string(id) + " has unknown type " + std::to_string(raw_type));
    const auto type = static_cast<TokenType>(raw_type);
    const std::string_view text = tokens->strings[id];
    if (type == TokenType::Normal || type == TokenType::Byte) {
      auto raw = gpt2_unicode_to_bytes(text);
      if (!raw)
        f.fail("tokenizer.ggml.tokens", tokens_kv->offset,
               "token " + std::to_string(id) + " \"" + std::string(text) + "\" is not GPT-2 byte-level text");
      tok->tokens.push_back(std::move(*raw));
    } else {
      tok->tokens.emplace_back(text);
    }
    tok->types.push_back(type);
  }
  if (const GgufValue* merges = f.optional("tokenizer.ggml.merges", GgufType::Array)) {
    const uint64_t at = f.find("tokenizer.ggml.merges")->offset;
    if (merges->element_type != GgufType::String) f.fail("tokenizer.ggml.merges", at, "must be an array of STRING");
    tok->merges.reserve(merges->count);
    for (uint64_t i = 0; i < merges->count; ++i) {
      const std::string_view m = merges->strings[i];
      const auto space = m.find(' ', 1);
      std::optional<std::string> left, right;
      if (space != std::string_view::npos) {
        left = gpt2_unicode_to_bytes(m.substr(0, space));
        right = gpt2_unicode_to_bytes(m.substr(space + 1));
      }
      if (!left || !right)
        f.fail("tokenizer.ggml.merges", at, "merge " + std::to_string(i) + " \"" + std::string(m) + "\" is not \"a b\" byte-level text");
      tok->merges.emplace_back(std::move(*left), std::move(*right));
    }
  }
  auto special = [&](const char* key) -> std::optional<uint32_t> {
    const GgufValue* v = f.optional(key, GgufType::U32);
    if (!v) return std::nullopt;
    if (v->bits >= tokens->count) f.fail(key, f.find(key)->offset, "token id " + std::to_string(v->bits) + " is outside the vocabulary");
    return static_cast<uint32_t>(v->bits);
  };
  tok->bos_id = special("tokenizer.ggml.bos_token_id");
  tok->eos_id = special("tokenizer.ggml.eos_token_id");
  tok->pad_id = special("tokenizer.ggml.padding_token_id");
  if (const GgufValue* t = f.optional("tokenizer.chat_template", GgufType::String)) tok->chat_template = std::string(t->string);
  const GgufValue* pre = f.optional("tokenizer.ggml.pre", GgufType::String);
  if (pre && (pre->string == "gpt-4o" || pre->string == "llama4")) tok->pretokenizer_regex = kO200kRegex;
  return tok;
}

}  // namespace gptoss

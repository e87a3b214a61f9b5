#include "convert/modelbin/modelbin_tokenizer.h"

#include "convert/tokenizer_merges.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

namespace gptoss {
namespace {
using modelbin::Uuid;

constexpr uint32_t kFirstSpecial = kModelBinTextTokens;

Uuid parse_uuid(std::string_view text) {
  Uuid u{};
  size_t n = 0;
  auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (size_t i = 0; i + 1 < text.size() && n < 16;) {
    if (text[i] == '-') {
      ++i;
      continue;
    }
    u[n++] = static_cast<uint8_t>(nibble(text[i]) * 16 + nibble(text[i + 1]));
    i += 2;
  }
  return u;
}

struct KnownSpecial {
  const char* name;  // as the Metal runtime's enum knows it
  const char* uuid;
};
// Every special-token UUID the Metal runtime recognises (types.h / uuid.h).
const KnownSpecial kKnownSpecials[] = {
    {"<|return|>", "f799ff69-1992-43c4-a3d8-d831f475dc75"},   {"<|start|>", "55a77c2f-8a01-4c54-8ac2-313bfc7e208d"},
    {"<|message|>", "16e40431-f47f-4b22-b59b-8b278fc30a54"},  {"<|end|>", "fcac2f6d-4705-4f6b-b228-642accac7238"},
    {"<|refusal|>", "e15ba702-28c4-4292-ab8f-ffa434709128"},  {"<|constrain|>", "c0bb14c7-6022-49da-ad08-792d67e8b470"},
    {"<|channel|>", "fd3dda11-c8ab-4033-876e-d93deb172c93"},  {"<|call|>", "1220f796-e388-4de5-b487-fe2eb5fe03c0"},
    {"<|untrusted|>", "07d7da55-b346-4cff-8b37-7cefacf8a3e8"}, {"<|end_untrusted|>", "f265bd9c-c717-469e-a447-920687d65d90"},
};

// Which runtime name OpenAI's writer puts in each of the 16 slots ("" = zero UUID). Slot 2 and
// 15 carry names o200k_harmony calls <|reserved_200000|> and <|reserved_200013|>; slot 3 stays
// empty because the writer's include list misspells <|end_untrusted|>.
const char* const kWriterSlots[kModelBinSpecialTokens] = {
    "", "", "<|untrusted|>", "", "<|return|>", "<|constrain|>", "", "<|channel|>",
    "<|start|>", "<|end|>", "<|message|>", "", "", "", "<|call|>", "<|refusal|>"};

// o200k_harmony's names for the ids after the text tokens (tokenizer.json's added_tokens).
std::string harmony_name(uint32_t id) {
  static const std::map<uint32_t, const char*> names = {
      {199998, "<|startoftext|>"}, {199999, "<|endoftext|>"}, {200002, "<|return|>"}, {200003, "<|constrain|>"},
      {200005, "<|channel|>"},     {200006, "<|start|>"},     {200007, "<|end|>"},    {200008, "<|message|>"},
      {200012, "<|call|>"},        {200018, "<|endofprompt|>"}};
  auto it = names.find(id);
  return it != names.end() ? it->second : "<|reserved_" + std::to_string(id) + "|>";
}

const Uuid* uuid_for_name(std::string_view name) {
  static const auto table = [] {
    std::map<std::string, Uuid, std::less<>> t;
    for (const auto& k : kKnownSpecials) t[k.name] = parse_uuid(k.uuid);
    return t;
  }();
  auto it = table.find(name);
  return it != table.end() ? &it->second : nullptr;
}

const char* name_for_uuid(const Uuid& u) {
  for (const auto& k : kKnownSpecials)
    if (parse_uuid(k.uuid) == u) return k.name;
  return nullptr;
}
}  // namespace

const char* const kO200kRegex =
    R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

const std::vector<Uuid>& modelbin_special_token_table() {
  static const std::vector<Uuid> table = [] {
    std::vector<Uuid> t(kModelBinSpecialTokens, Uuid{});
    for (uint32_t slot = 0; slot < kModelBinSpecialTokens; ++slot)
      if (*kWriterSlots[slot]) t[slot] = *uuid_for_name(kWriterSlots[slot]);
    return t;
  }();
  return table;
}

modelbin::TokenizerSection modelbin_tokenizer_section(const TokenizerData& tok, std::vector<std::string>& notes) {
  if (tok.size() < kModelBinTextTokens)
    throw std::invalid_argument("model.bin stores the o200k tokenizer's " + std::to_string(kModelBinTextTokens) +
                                " text tokens, but this tokenizer has only " + std::to_string(tok.size()) + " tokens");
  modelbin::TokenizerSection section;
  section.text_tokens.reserve(kModelBinTextTokens);
  for (uint32_t id = 0; id < kModelBinTextTokens; ++id) {
    if (tok.is_special(id) || tok.tokens[id].empty())
      throw std::invalid_argument("model.bin needs ids 0.." + std::to_string(kModelBinTextTokens - 1) +
                                  " to be ordinary byte tokens (o200k_base); id " + std::to_string(id) + " is " +
                                  (tok.tokens[id].empty() ? "empty" : "the special token " + tok.tokens[id]));
    section.text_tokens.emplace_back(tok.tokens[id]);
  }
  // The table's slots are fixed; refuse a tokenizer whose harmony specials sit elsewhere, since
  // the runtime would then stop or route on the wrong ids.
  for (uint32_t slot = 0; slot < kModelBinSpecialTokens; ++slot) {
    const uint32_t id = kFirstSpecial + slot;
    const std::string expected = harmony_name(id);
    if (expected.rfind("<|reserved_", 0) == 0 || id >= tok.size()) continue;
    if (tok.tokens[id] != expected)
      throw std::invalid_argument("model.bin's special-token table is o200k_harmony's: id " + std::to_string(id) +
                                  " must be " + expected + ", this tokenizer has \"" + tok.tokens[id] + "\"");
  }
  section.special_token_uuids = modelbin_special_token_table();
  if (tok.pretokenizer_regex.empty()) {
    section.regex = kO200kRegex;
    notes.push_back("tokenizer has no pre-tokenizer regex; model.bin gets tiktoken's o200k_base pattern");
  } else {
    section.regex = tok.pretokenizer_regex;
    if (section.regex != kO200kRegex)
      notes.push_back("tokenizer regex differs from o200k_base's; model.bin stores the tokenizer's (the Metal runtime "
                      "does not use it)");
  }
  if (tok.size() > kModelBinVocabulary)
    notes.push_back("model.bin keeps token ids 0.." + std::to_string(kModelBinVocabulary - 1) + "; the tokenizer's " +
                    std::to_string(tok.size() - kModelBinVocabulary) + " tokens above are not stored");
  return section;
}

std::shared_ptr<TokenizerData> tokenizer_from_modelbin(const modelbin::ModelBinFile& file, std::vector<std::string>& notes) {
  const auto& th = file.tokenizer_header();
  auto tok = std::make_shared<TokenizerData>();
  const uint64_t total = uint64_t{th.num_text_tokens} + th.num_special_tokens;
  tok->tokens.reserve(total);
  tok->types.reserve(total);
  for (std::string_view t : file.text_tokens()) {
    tok->tokens.emplace_back(t);
    tok->types.push_back(TokenType::Normal);
  }
  const bool o200k = th.num_text_tokens == kModelBinTextTokens;
  const auto& uuids = file.special_token_uuids();
  std::string differences;
  for (uint32_t slot = 0; slot < th.num_special_tokens; ++slot) {
    const uint32_t id = th.num_text_tokens + slot;
    const char* from_uuid = name_for_uuid(uuids[slot]);
    std::string name = o200k ? harmony_name(id) : from_uuid ? from_uuid : "<|reserved_" + std::to_string(id) + "|>";
    tok->tokens.push_back(name);
    tok->types.push_back(TokenType::Control);
    const modelbin::Uuid expected = slot < kModelBinSpecialTokens ? modelbin_special_token_table()[slot] : modelbin::Uuid{};
    if (uuids[slot] != expected)
      differences += " id " + std::to_string(id) + " has " +
                     (modelbin::is_zero_uuid(uuids[slot]) ? std::string("no UUID")
                                                          : from_uuid ? std::string(from_uuid)
                                                                      : "unknown UUID " + modelbin::uuid_to_string(uuids[slot])) +
                     ";";
  }
  if (!differences.empty())
    notes.push_back("special-token UUID table differs from OpenAI's writer (token names follow o200k_harmony):" +
                    differences);
  tok->pretokenizer_regex = std::string(file.regex());
  tok->merges = derive_merges_from_ranks(*tok);  // model.bin stores ranks only
  tok->bos_id = tok->find_special("<|startoftext|>");
  tok->eos_id = tok->find_special("<|return|>");
  tok->pad_id = tok->find_special("<|endoftext|>");
  notes.push_back("tokenizer from model.bin: " + std::to_string(th.num_text_tokens) + " text tokens and " +
                  std::to_string(th.num_special_tokens) + " special tokens (named as in o200k_harmony); BPE merges " +
                  "derived from the token ranks (" + std::to_string(tok->merges.size()) + "); no chat template");
  return tok;
}

}  // namespace gptoss

#include "runtime/eval/chunk_plan.h"

#include <algorithm>
#include <stdexcept>

#include "runtime/tokenizer/tokenizer.h"
#include "verify/sha256.h"

namespace gptoss::eval {

ChunkPlan plan_chunks(size_t token_count, uint32_t ctx, std::optional<uint32_t> chunks) {
  if (ctx < 4) throw std::invalid_argument("--ctx must be at least 4 (each chunk is scored on its second half)");
  if (chunks && *chunks == 0) throw std::invalid_argument("--chunks must be at least 1");
  ChunkPlan plan;
  plan.ctx = ctx;
  plan.available_chunks = static_cast<uint32_t>(std::min<size_t>(token_count / ctx, UINT32_MAX));
  if (plan.available_chunks == 0)
    throw std::invalid_argument("the text is " + std::to_string(token_count) + " tokens, fewer than one chunk of --ctx " +
                                std::to_string(ctx));
  plan.chunks = chunks ? std::min(*chunks, plan.available_chunks) : plan.available_chunks;
  return plan;
}

std::string tokenizer_digest(const TokenizerData& tokenizer) {
  Sha256 hash;
  auto add_u64 = [&](uint64_t v) {
    uint8_t bytes[8];
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<uint8_t>(v >> (8 * i));
    hash.update(bytes);
  };
  auto add_text = [&](std::string_view text) {
    add_u64(text.size());
    hash.update({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
  };
  add_text(tokenizer.pretokenizer_regex);
  for (uint32_t id = 0; id < tokenizer.tokens.size(); ++id) {
    if (tokenizer.is_special(id) || tokenizer.tokens[id].empty()) continue;
    if (id < tokenizer.types.size() && tokenizer.types[id] == TokenType::Unused) continue;
    add_u64(id);
    add_text(tokenizer.tokens[id]);
  }
  return hash.finish_hex();
}

TextTokens tokenize_text(std::span<const TokenizerData* const> tokenizers, std::span<const std::string> names,
                         std::string_view text) {
  TextTokens out;
  std::optional<size_t> first;
  for (size_t i = 0; i < tokenizers.size(); ++i) {
    if (!tokenizers[i]) continue;
    const std::string digest = tokenizer_digest(*tokenizers[i]);
    if (!first) {
      first = i;
      out.tokenizer_digest = digest;
    } else if (digest != out.tokenizer_digest) {
      throw std::invalid_argument(names[i] + ": its tokenizer differs from " + names[*first] +
                                  "'s (ordinary tokens or pre-tokenizer), so the text would not be the same tokens");
    }
  }
  if (!first) throw std::invalid_argument("no model has a tokenizer to turn the text into tokens");
  out.ids = Tokenizer(*tokenizers[*first]).encode(text, /*allow_special=*/false);
  return out;
}

std::string sha256_of(std::span<const uint8_t> bytes) { return sha256_hex(bytes); }

}  // namespace gptoss::eval

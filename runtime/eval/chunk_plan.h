#pragma once
// How a text is cut and scored, as llama.cpp's llama-perplexity does it so that the numbers are
// comparable: the whole text is tokenized once (special tokens written in it are plain text; no
// BOS: llama.cpp adds none for gpt-oss, whose GGUF vocabulary is "gpt2"/"gpt-4o" without
// add_bos_token), cut into `chunks` consecutive chunks of `ctx` tokens (the tail that does not
// fill a chunk is dropped), each run from an empty KV cache, and each scored on its second half:
// the logits at positions ctx/2 .. ctx-2 predicting tokens ctx/2+1 .. ctx-1, so ctx - 1 - ctx/2
// tokens per chunk (255 of 512).
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "convert/tokenizer_data.h"

namespace gptoss::eval {

struct ChunkPlan {
  uint32_t ctx = 0;
  uint32_t chunks = 0;
  uint32_t available_chunks = 0;  // chunks the text holds

  uint32_t first_scored() const { return ctx / 2; }  // the first position whose logits are scored
  uint32_t scored_per_chunk() const { return ctx - 1 - ctx / 2; }
  uint64_t scored_tokens() const { return uint64_t{chunks} * scored_per_chunk(); }
  uint64_t evaluated_tokens() const { return uint64_t{chunks} * ctx; }  // tokens run through a model
};

// Throws std::invalid_argument when ctx < 4 or the text holds no full chunk. `chunks` (none: all)
// larger than what the text holds is clamped, as llama-perplexity does.
ChunkPlan plan_chunks(size_t token_count, uint32_t ctx, std::optional<uint32_t> chunks);

// What decides how a text becomes ids, so two models whose tokenizers agree on it tokenize every
// text alike: SHA-256 of the pre-tokenizer pattern and of every ordinary (non-special, non-empty)
// token's bytes in id order. Special tokens are left out: the text is encoded without them, and
// formats keep different sets (model.bin keeps 16 of 21).
std::string tokenizer_digest(const TokenizerData& tokenizer);

// The text's ids (special tokens written in it as plain text) with the tokenizer that every model
// holding one agrees on (tokenizer_digest), and that digest. `tokenizers[i]` is model i's (null:
// none) and `names[i]` names it in the refusals: std::invalid_argument when two tokenizers differ
// or no model has one.
struct TextTokens {
  std::vector<uint32_t> ids;
  std::string tokenizer_digest;
};
TextTokens tokenize_text(std::span<const TokenizerData* const> tokenizers, std::span<const std::string> names,
                         std::string_view text);

// SHA-256 of the bytes, lowercase hex.
std::string sha256_of(std::span<const uint8_t> bytes);

}  // namespace gptoss::eval

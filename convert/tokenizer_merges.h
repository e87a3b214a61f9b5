#pragma once
// BPE merges derived from a rank-ordered vocabulary, for sources that store only tokens by rank
// (model.bin's tiktoken section). Derived the way Hugging Face converts tiktoken vocabularies:
// every split of a token into two tokens of the vocabulary is a merge; merges are ordered by the
// rank of the token they make, and the splits of one token by (rank of left, rank of right).
// On the o200k_harmony vocabulary this reproduces tokenizer.json's 446189 merges exactly.
#include <string>
#include <utility>
#include <vector>

#include "convert/tokenizer_data.h"

namespace gptoss {

// Ranks are token ids; only Normal tokens take part (special and unused ids are skipped).
std::vector<std::pair<std::string, std::string>> derive_merges_from_ranks(const TokenizerData& data);

}  // namespace gptoss

#include "convert/tokenizer_merges.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

namespace gptoss {

std::vector<std::pair<std::string, std::string>> derive_merges_from_ranks(const TokenizerData& data) {
  std::unordered_map<std::string_view, uint32_t> rank_of;
  rank_of.reserve(data.tokens.size());
  for (uint32_t id = 0; id < data.tokens.size(); ++id)
    if (id < data.types.size() && data.types[id] == TokenType::Normal && !data.tokens[id].empty())
      rank_of.emplace(data.tokens[id], id);  // tokens are unique; were one repeated, its lowest rank would win

  struct Split {
    uint32_t left_rank, right_rank;
    size_t at;
  };
  std::vector<std::pair<std::string, std::string>> merges;
  std::vector<Split> splits;
  for (uint32_t id = 0; id < data.tokens.size(); ++id) {
    if (id >= data.types.size() || data.types[id] != TokenType::Normal) continue;
    const std::string_view token = data.tokens[id];
    splits.clear();
    for (size_t at = 1; at < token.size(); ++at) {
      const auto left = rank_of.find(token.substr(0, at));
      if (left == rank_of.end()) continue;
      const auto right = rank_of.find(token.substr(at));
      if (right == rank_of.end()) continue;
      splits.push_back({left->second, right->second, at});
    }
    std::sort(splits.begin(), splits.end(), [](const Split& a, const Split& b) {
      return a.left_rank != b.left_rank ? a.left_rank < b.left_rank : a.right_rank < b.right_rank;
    });
    for (const Split& s : splits) merges.emplace_back(std::string(token.substr(0, s.at)), std::string(token.substr(s.at)));
  }
  return merges;
}

}  // namespace gptoss

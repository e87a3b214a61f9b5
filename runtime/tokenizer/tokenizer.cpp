#include "runtime/tokenizer/tokenizer.h"

#include <algorithm>
#include <mutex>
#include <optional>
#include <queue>
#include <stdexcept>
#include <unordered_map>

#include "convert/tokenizer_merges.h"
#include "formats/core/error.h"
#include "runtime/tokenizer/o200k_pretokenizer.h"
#include "runtime/tokenizer/utf8.h"

namespace gptoss {

namespace {
constexpr const char* kSource = "tokenizer";

uint64_t pair_key(uint32_t left, uint32_t right) { return (uint64_t{left} << 32) | right; }

struct Merge {
  uint32_t rank;    // position in the merges list: lower merges first
  uint32_t result;  // id of the merged token
};

// Open-addressing tables (linear probing, a power-of-two array at most half full): the vocabulary
// (200k tokens) and the merges (446k) in one flat array each instead of a heap node per entry,
// whose allocations and scattered lookups were most of building a tokenizer, which every tool
// that shows text does at start-up. Both keep the first entry of a key, as emplace did.
size_t table_size(size_t entries) {
  size_t size = 16;
  while (size < 2 * entries) size *= 2;
  return size;
}

// Token text -> id over `tokens` (the ids are stored; the texts stay in `tokens`).
class VocabIndex {
 public:
  void build(const std::vector<std::string>& tokens, const std::vector<bool>& include) {
    tokens_ = &tokens;
    slots_.assign(table_size(tokens.size()), 0);
    for (uint32_t id = 0; id < tokens.size(); ++id) {
      if (!include[id]) continue;
      uint32_t& slot = slots_[slot_of(tokens[id])];
      if (slot == 0) slot = id + 1;
    }
  }
  std::optional<uint32_t> find(std::string_view text) const {
    const uint32_t slot = slots_[slot_of(text)];
    if (slot == 0) return std::nullopt;
    return slot - 1;
  }

 private:
  // The slot holding `text`, else the empty slot where it would go.
  size_t slot_of(std::string_view text) const {
    const size_t mask = slots_.size() - 1;
    size_t i = std::hash<std::string_view>()(text) & mask;
    while (slots_[i] != 0 && (*tokens_)[slots_[i] - 1] != text) i = (i + 1) & mask;
    return i;
  }
  const std::vector<std::string>* tokens_ = nullptr;
  std::vector<uint32_t> slots_ = std::vector<uint32_t>(16, 0);  // id + 1; 0 is empty
};

// (left id, right id) -> merge.
class MergeIndex {
 public:
  void reserve(size_t entries) { slots_.assign(table_size(entries), Slot{kEmpty, {}}); }
  void emplace(uint64_t key, Merge merge) {
    Slot& slot = slots_[slot_of(key)];
    if (slot.key != kEmpty) return;
    slot = {key, merge};
    ++size_;
  }
  const Merge* find(uint64_t key) const {
    const Slot& slot = slots_[slot_of(key)];
    return slot.key == kEmpty ? nullptr : &slot.merge;
  }
  size_t size() const { return size_; }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};  // ids are below 2^31: no pair is all ones
  struct Slot {
    uint64_t key;
    Merge merge;
  };
  size_t slot_of(uint64_t key) const {
    const size_t mask = slots_.size() - 1;
    size_t i = static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 20) & mask;
    while (slots_[i].key != kEmpty && slots_[i].key != key) i = (i + 1) & mask;
    return i;
  }
  std::vector<Slot> slots_ = std::vector<Slot>(16, Slot{kEmpty, {}});
  size_t size_ = 0;
};

// Pieces longer than this are not cached: they are rare and would crowd the cache.
constexpr size_t kMaxCachedPieceBytes = 64;
constexpr size_t kMaxCacheEntries = 1 << 16;
}  // namespace

struct Tokenizer::Impl {
  std::vector<std::string> tokens;
  std::vector<bool> special;
  VocabIndex vocab;   // Normal tokens (texts in `tokens`)
  MergeIndex merges;  // (left id, right id) -> merge
  std::array<uint32_t, 256> byte_token{};
  std::vector<std::pair<std::string_view, uint32_t>> specials;  // longest first
  std::array<bool, 256> special_first_byte{};

  mutable std::mutex cache_mutex;
  mutable std::unordered_map<std::string, std::vector<uint32_t>> cache;

  void bpe(std::string_view piece, std::vector<uint32_t>& out) const;
  void encode_piece(std::string_view piece, std::vector<uint32_t>& out) const;
};

Tokenizer::Tokenizer(const TokenizerData& data) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  if (data.pretokenizer_regex != kO200kPretokenizerRegex)
    throw_format_error(kSource, "pretokenizer_regex", std::nullopt,
                       "only the o200k pre-tokenizer pattern is supported; got \"" +
                           data.pretokenizer_regex.substr(0, 80) + (data.pretokenizer_regex.size() > 80 ? "...\"" : "\""));
  if (data.types.size() != data.tokens.size())
    throw_format_error(kSource, "types", std::nullopt, "has " + std::to_string(data.types.size()) + " entries for " +
                                                           std::to_string(data.tokens.size()) + " tokens");
  if (data.tokens.size() >= (size_t{1} << 31)) throw_format_error(kSource, "tokens", std::nullopt, "too many tokens");
  m.tokens = data.tokens;
  m.special.resize(m.tokens.size());
  std::vector<bool> normal(m.tokens.size());
  for (uint32_t id = 0; id < m.tokens.size(); ++id) {
    m.special[id] = data.is_special(id);
    normal[id] = data.types[id] == TokenType::Normal && !m.tokens[id].empty();
    if (m.special[id] && !m.tokens[id].empty()) m.specials.emplace_back(m.tokens[id], id);
  }
  m.vocab.build(m.tokens, normal);
  std::stable_sort(m.specials.begin(), m.specials.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  for (const auto& [text, id] : m.specials) m.special_first_byte[static_cast<uint8_t>(text[0])] = true;
  for (int b = 0; b < 256; ++b) {
    const char byte = static_cast<char>(b);
    const auto id = m.vocab.find(std::string_view(&byte, 1));
    if (!id)
      throw_format_error(kSource, "tokens", std::nullopt, "byte " + std::to_string(b) + " has no token: not a byte-level BPE vocabulary");
    m.byte_token[static_cast<size_t>(b)] = *id;
  }
  const auto add_merges = [&](const std::vector<std::pair<std::string, std::string>>& list) {
    m.merges.reserve(list.size());
    std::string joined;  // one buffer for every merge's result text
    for (size_t rank = 0; rank < list.size(); ++rank) {
      const auto& [left, right] = list[rank];
      joined.assign(left).append(right);
      const auto l = m.vocab.find(left), r = m.vocab.find(right), result = m.vocab.find(joined);
      if (!l || !r || !result)
        throw_format_error(kSource, "merges", std::nullopt,
                           "merge " + std::to_string(rank) + " names a token that is not in the vocabulary");
      m.merges.emplace(pair_key(*l, *r), Merge{static_cast<uint32_t>(rank), *result});  // first rank wins
    }
  };
  if (data.merges.empty()) add_merges(derive_merges_from_ranks(data));
  else add_merges(data.merges);
}

Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

// Byte-level BPE as Hugging Face does it: start from single bytes and repeatedly apply the
// lowest-ranked merge among adjacent pairs, the leftmost on ties. A heap of candidate merges
// keeps long pieces (thousands of spaces, say) O(n log n).
void Tokenizer::Impl::bpe(std::string_view piece, std::vector<uint32_t>& out) const {
  struct Symbol {
    uint32_t id;
    int32_t prev, next;  // -1 at the ends
    bool alive;
  };
  struct Candidate {
    uint32_t rank;
    int32_t pos;
    uint32_t result;
    bool operator<(const Candidate& o) const {  // priority_queue pops the largest: invert
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  thread_local std::vector<Symbol> symbols;
  thread_local std::vector<Candidate> heap_storage;
  symbols.clear();
  const int32_t n = static_cast<int32_t>(piece.size());
  for (int32_t i = 0; i < n; ++i)
    symbols.push_back({byte_token[static_cast<uint8_t>(piece[static_cast<size_t>(i)])], i - 1, i + 1 < n ? i + 1 : -1, true});
  heap_storage.clear();
  std::priority_queue<Candidate, std::vector<Candidate>> heap(std::less<Candidate>(), std::move(heap_storage));
  const auto push_pair = [&](int32_t left) {
    if (left < 0) return;
    const int32_t right = symbols[static_cast<size_t>(left)].next;
    if (right < 0) return;
    const Merge* merge = merges.find(pair_key(symbols[static_cast<size_t>(left)].id, symbols[static_cast<size_t>(right)].id));
    if (merge) heap.push({merge->rank, left, merge->result});
  };
  for (int32_t i = 0; i + 1 < n; ++i) push_pair(i);
  while (!heap.empty()) {
    const Candidate top = heap.top();
    heap.pop();
    Symbol& left = symbols[static_cast<size_t>(top.pos)];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = symbols[static_cast<size_t>(left.next)];
    // Stale entry: one side has been merged since (the pair would now make another token).
    const Merge* merge = merges.find(pair_key(left.id, right.id));
    if (!merge || merge->result != top.result) continue;
    left.id = top.result;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) symbols[static_cast<size_t>(right.next)].prev = top.pos;
    push_pair(left.prev);
    push_pair(top.pos);
  }
  for (int32_t i = 0; i >= 0 && i < n; i = symbols[static_cast<size_t>(i)].next) out.push_back(symbols[static_cast<size_t>(i)].id);
}

void Tokenizer::Impl::encode_piece(std::string_view piece, std::vector<uint32_t>& out) const {
  // ignore_merges: a piece that is itself a token is that token (tokenizer.json sets it, and
  // tiktoken does the same).
  if (const auto id = vocab.find(piece)) {
    out.push_back(*id);
    return;
  }
  if (piece.size() > kMaxCachedPieceBytes) {
    bpe(piece, out);
    return;
  }
  {
    std::lock_guard lock(cache_mutex);
    if (const auto it = cache.find(std::string(piece)); it != cache.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t first = out.size();
  bpe(piece, out);
  std::lock_guard lock(cache_mutex);
  if (cache.size() >= kMaxCacheEntries) cache.clear();
  cache.emplace(std::string(piece), std::vector<uint32_t>(out.begin() + static_cast<std::ptrdiff_t>(first), out.end()));
}

void Tokenizer::encode_ordinary_into(std::string_view text, std::vector<uint32_t>& out) const {
  o200k_split(text, [&](std::string_view piece) { impl_->encode_piece(piece, out); });
}

std::vector<uint32_t> Tokenizer::encode(std::string_view text, bool allow_special) const {
  std::vector<uint32_t> out;
  out.reserve(text.size() / 3 + 4);
  if (!allow_special || impl_->specials.empty()) {
    encode_ordinary_into(text, out);
    return out;
  }
  size_t segment_start = 0;
  for (size_t pos = 0; pos < text.size();) {
    if (!impl_->special_first_byte[static_cast<uint8_t>(text[pos])]) {
      ++pos;
      continue;
    }
    const std::pair<std::string_view, uint32_t>* found = nullptr;
    for (const auto& special : impl_->specials)
      if (text.substr(pos).starts_with(special.first)) {
        found = &special;  // specials are sorted longest first
        break;
      }
    if (!found) {
      ++pos;
      continue;
    }
    encode_ordinary_into(text.substr(segment_start, pos - segment_start), out);
    out.push_back(found->second);
    pos += found->first.size();
    segment_start = pos;
  }
  encode_ordinary_into(text.substr(segment_start), out);
  return out;
}

std::string_view Tokenizer::token_bytes(uint32_t id) const {
  if (id >= impl_->tokens.size())
    throw std::out_of_range("token id " + std::to_string(id) + " is outside the vocabulary of " +
                            std::to_string(impl_->tokens.size()) + " tokens");
  return impl_->tokens[id];
}

std::string Tokenizer::decode(std::span<const uint32_t> ids) const {
  std::string out;
  for (uint32_t id : ids) out.append(token_bytes(id));
  return out;
}

std::string Tokenizer::decode_text(std::span<const uint32_t> ids) const { return utf8::to_valid_lossy(decode(ids)); }

size_t Tokenizer::vocab_size() const { return impl_->tokens.size(); }
bool Tokenizer::is_special(uint32_t id) const { return id < impl_->special.size() && impl_->special[id]; }
size_t Tokenizer::merge_count() const { return impl_->merges.size(); }

std::optional<uint32_t> Tokenizer::special_id(std::string_view text) const {
  for (const auto& [special_text, id] : impl_->specials)
    if (special_text == text) return id;
  return std::nullopt;
}

std::string StreamingDecoder::push(uint32_t id) {
  pending_.append(tokenizer_->token_bytes(id));
  const size_t ready = utf8::complete_prefix_length(pending_);
  std::string out = utf8::to_valid_lossy(std::string_view(pending_).substr(0, ready));
  pending_.erase(0, ready);
  return out;
}

std::string StreamingDecoder::finish() {
  std::string out = utf8::to_valid_lossy(pending_);
  pending_.clear();
  return out;
}

}  // namespace gptoss

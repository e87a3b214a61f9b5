#include "runtime/engine.h"

#include <algorithm>
#include <stdexcept>

namespace gptoss::runtime {
namespace {
struct KindName {
  EngineKind kind;
  const char* name;
};
constexpr KindName kKindNames[] = {{EngineKind::Cpu, "cpu"}, {EngineKind::CpuF64, "cpu-f64"}, {EngineKind::Vulkan, "vulkan"}};
struct CacheTypeName {
  KvCacheType type;
  const char* name;
};
constexpr CacheTypeName kCacheTypeNames[] = {{KvCacheType::F32, "f32"}, {KvCacheType::F16, "f16"}};
}  // namespace

std::string_view kv_cache_type_name(KvCacheType type) {
  for (const auto& t : kCacheTypeNames)
    if (t.type == type) return t.name;
  return "unknown";
}

std::optional<KvCacheType> kv_cache_type_from_name(std::string_view name) {
  for (const auto& t : kCacheTypeNames)
    if (name == t.name) return t.type;
  return std::nullopt;
}

const std::vector<std::string>& kv_cache_type_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all;
    for (const auto& t : kCacheTypeNames) all.emplace_back(t.name);
    return all;
  }();
  return names;
}

std::string_view engine_kind_name(EngineKind kind) {
  for (const auto& k : kKindNames)
    if (k.kind == kind) return k.name;
  return "unknown";
}

std::optional<EngineKind> engine_kind_from_name(std::string_view name) {
  for (const auto& k : kKindNames)
    if (name == k.name) return k.kind;
  return std::nullopt;
}

const std::vector<std::string>& engine_kind_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all;
    for (const auto& k : kKindNames) all.emplace_back(k.name);
    return all;
  }();
  return names;
}

uint32_t Engine::run_forward_greedy(std::span<const uint32_t> tokens) {
  std::vector<float> logits(vocab_size());
  run_forward(tokens, LogitRows::Last, logits, {});
  return static_cast<uint32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

uint32_t Engine::forward_greedy(std::span<const uint32_t> tokens) {
  if (tokens.empty()) throw std::invalid_argument("greedy decoding needs at least one token");
  check_forward(tokens);
  return run_forward_greedy(tokens);
}

std::span<const float> Engine::run_forward_last(std::span<const uint32_t> tokens) {
  last_logits_.resize(vocab_size());
  run_forward(tokens, LogitRows::Last, last_logits_, {});
  return last_logits_;
}

std::span<const float> Engine::forward_last(std::span<const uint32_t> tokens) {
  if (tokens.empty()) throw std::invalid_argument("forward_last needs at least one token");
  check_forward(tokens);
  return run_forward_last(tokens);
}

LogitRows Engine::check_forward(std::span<const uint32_t> tokens, LogitRows rows) const {
  if (rows.kind == LogitRows::Kind::Range) {
    if (rows.first > tokens.size() || rows.count > tokens.size() - rows.first)
      throw std::out_of_range("logit rows " + std::to_string(rows.first) + " .. " +
                              std::to_string(rows.first + rows.count) + " (exclusive) are past the " +
                              std::to_string(tokens.size()) + " new tokens of the forward");
    if (rows.count == 0) rows = LogitRows::None;
  }
  check_forward(tokens);
  return rows;
}

void Engine::forward(std::span<const uint32_t> tokens, LogitRows rows, std::vector<float>& logits,
                     const ActivationObserver& observer) {
  rows = check_forward(tokens, rows);
  logits.resize(rows.row_count(tokens.size()) * vocab_size());
  if (tokens.empty()) return;
  run_forward(tokens, rows, logits, observer);
}

std::vector<float> Engine::forward(std::span<const uint32_t> tokens, LogitRows rows,
                                   const ActivationObserver& observer) {
  std::vector<float> logits;
  forward(tokens, rows, logits, observer);
  return logits;
}

void Engine::check_forward(std::span<const uint32_t> tokens) const {
  const uint32_t vocab = vocab_size();
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] >= vocab)
      throw std::out_of_range("token id " + std::to_string(tokens[i]) + " (position " +
                              std::to_string(position() + i) + ") is outside the vocabulary of " +
                              std::to_string(vocab));
  if (position() + tokens.size() > capacity())
    throw std::out_of_range("context of " + std::to_string(position() + tokens.size()) + " tokens exceeds the " +
                            std::to_string(capacity()) + " positions of the " +
                            std::string(engine_kind_name(kind())) + " engine's KV cache");
}

}  // namespace gptoss::runtime

#include "runtime/engine.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "formats/core/name_table.h"
#include "formats/core/parallel_for.h"

namespace gptoss::runtime {
namespace {
using Kind = std::pair<EngineKind, const char*>;
constexpr NameTable kKindNames{Kind{EngineKind::Cpu, "cpu"}, Kind{EngineKind::CpuF64, "cpu-f64"},
                               Kind{EngineKind::Vulkan, "vulkan"}};
using CacheType = std::pair<KvCacheType, const char*>;
constexpr NameTable kCacheTypeNames{CacheType{KvCacheType::F32, "f32"}, CacheType{KvCacheType::F16, "f16"}};
}  // namespace

std::string_view kv_cache_type_name(KvCacheType type) { return kCacheTypeNames.name(type); }
std::optional<KvCacheType> kv_cache_type_from_name(std::string_view name) { return kCacheTypeNames.from_name(name); }
const std::vector<std::string>& kv_cache_type_names() {
  static const std::vector<std::string> names = kCacheTypeNames.names();
  return names;
}

std::string stage_name(Stage stage, int layer) {
  switch (stage) {
    case Stage::Embedding: return "embedding";
    case Stage::LayerOutput: return "layer " + std::to_string(layer);
    case Stage::RouterChoices: return "router " + std::to_string(layer);
    case Stage::FinalNorm: return "final norm";
    case Stage::AttentionOutput: return "attention " + std::to_string(layer);
  }
  return "stage";
}

std::string engine_label(EngineKind kind, KvCacheType kv_cache) {
  const std::string engine(engine_kind_name(kind));
  return kv_cache == KvCacheType::F32 ? engine : engine + " (" + std::string(kv_cache_type_name(kv_cache)) + " KV cache)";
}

std::string_view engine_kind_name(EngineKind kind) { return kKindNames.name(kind); }
std::optional<EngineKind> engine_kind_from_name(std::string_view name) { return kKindNames.from_name(name); }
const std::vector<std::string>& engine_kind_names() {
  static const std::vector<std::string> names = kKindNames.names();
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

LogitRows Engine::check_forward(std::span<const uint32_t> tokens, LogitRows rows, uint64_t first) const {
  if (rows.kind == LogitRows::Kind::Range) {
    if (rows.first > tokens.size() || rows.count > tokens.size() - rows.first)
      throw std::out_of_range("logit rows " + std::to_string(rows.first) + " .. " +
                              std::to_string(rows.first + rows.count) + " (exclusive) are past the " +
                              std::to_string(tokens.size()) + " new tokens of the forward");
    if (rows.count == 0) rows = LogitRows::None;
  }
  check_forward(tokens, first);
  return rows;
}

void Engine::forward(std::span<const uint32_t> tokens, LogitRows rows, std::vector<float>& logits,
                     const ActivationObserver& observer) {
  rows = check_forward(tokens, rows, position());
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

size_t Engine::check_sequences(std::span<const uint32_t> tokens, uint32_t sequences, LogitRows& rows) const {
  if (sequences == 0 || tokens.size() % sequences)
    throw std::invalid_argument(std::to_string(tokens.size()) + " tokens are not " + std::to_string(sequences) +
                                " sequences of equal length");
  const size_t length = tokens.size() / sequences;
  for (uint32_t s = 0; s < sequences; ++s) rows = check_forward(tokens.subspan(s * length, length), rows, 0);
  return sequences * rows.row_count(length) * vocab_size();
}

void Engine::forward_sequences(std::span<const uint32_t> tokens, uint32_t sequences, LogitRows rows,
                               std::span<float> logits) {
  const size_t floats = check_sequences(tokens, sequences, rows);
  if (logits.size() != floats)
    throw std::invalid_argument("forward_sequences: room for " + std::to_string(logits.size()) + " floats where the " +
                                "sequences' logits take " + std::to_string(floats));
  if (tokens.empty()) return reset();
  run_forward_sequences(tokens, sequences, rows, logits);
}

void Engine::forward_sequences(std::span<const uint32_t> tokens, uint32_t sequences, LogitRows rows,
                               std::vector<float>& logits) {
  logits.resize(check_sequences(tokens, sequences, rows));
  if (tokens.empty()) return reset();
  run_forward_sequences(tokens, sequences, rows, logits);
}

void Engine::run_forward_sequences(std::span<const uint32_t> tokens, uint32_t sequences, LogitRows rows,
                                   std::span<float> logits) {
  const size_t length = tokens.size() / sequences, per_sequence = rows.row_count(length) * vocab_size();
  for (uint32_t s = 0; s < sequences; ++s) {
    reset();
    run_forward(tokens.subspan(s * length, length), rows, logits.subspan(s * per_sequence, per_sequence), {});
  }
  reset();
}

LogitMemory Engine::logit_memory(size_t floats) {
  if (floats == 0) throw std::invalid_argument("logit_memory: no floats asked for");
  return allocate_logit_memory(floats);
}

LogitMemory Engine::allocate_logit_memory(size_t floats) {
  // First touched on every core, where a vector's resize zero-fills on one thread: a group of
  // gptoss-eval's scored rows at the real vocabulary is 820 MB a model, and a first touch of it on
  // one thread slowed the evaluation down measurably (bfdca17).
  std::shared_ptr<float[]> memory = std::make_unique_for_overwrite<float[]>(floats);
  constexpr size_t kPiece = size_t{4} << 20;
  parallel_for((floats + kPiece - 1) / kPiece, available_cores(), [&](size_t i) {
    std::memset(memory.get() + i * kPiece, 0, std::min(kPiece, floats - i * kPiece) * sizeof(float));
  });
  return {{memory.get(), floats}, memory};
}

void Engine::check_forward(std::span<const uint32_t> tokens, uint64_t first) const {
  const uint32_t vocab = vocab_size();
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] >= vocab)
      throw std::out_of_range("token id " + std::to_string(tokens[i]) + " (position " +
                              std::to_string(first + i) + ") is outside the vocabulary of " +
                              std::to_string(vocab));
  if (first + tokens.size() > capacity())
    throw std::out_of_range("context of " + std::to_string(first + tokens.size()) + " tokens exceeds the " +
                            std::to_string(capacity()) + " positions of the " +
                            std::string(engine_kind_name(kind())) + " engine's KV cache");
}

}  // namespace gptoss::runtime

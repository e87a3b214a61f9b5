#pragma once
// The CPU reference engine: the GPT-OSS forward pass in f32 on exactly decoded weights, with a
// KV cache. Everything the Vulkan engine computes is checked against this one, and this one
// against transformers (shared/goldens/a/refs-a.safetensors), so it favours clarity and exact
// reference semantics over speed; matrix products still go through OpenBLAS.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "convert/canonical_model.h"
#include "runtime/cpu/cpu_weights.h"

namespace gptoss::cpu {

// Where in the forward pass an activation was observed.
enum class Stage { Embedding, LayerOutput, FinalNorm };

// Rows [first_position, first_position + rows) of an activation, row-major [rows, cols].
// LayerOutput is the residual stream after decoder layer `layer` (-1 for the other stages).
struct ActivationView {
  Stage stage;
  int layer;
  uint64_t first_position;
  size_t rows;
  size_t cols;
  std::span<const float> values;
};
using ActivationObserver = std::function<void(const ActivationView&)>;

enum class LogitRows { None, Last, All };

class CpuEngine {
 public:
  explicit CpuEngine(const CanonicalModel& model);
  explicit CpuEngine(CpuWeights weights);

  const GptOssConfig& config() const { return weights_.config; }
  uint32_t vocab_size() const { return weights_.config.vocab_size; }
  // Tokens held in the KV cache: the position the next token gets.
  uint64_t position() const { return position_; }
  void reset() { position_ = 0; }

  // Runs `tokens` after everything in the cache (a prefill when the cache is empty, a decode step
  // for one token) and appends them to the cache. Returns the logits of the requested rows,
  // row-major [rows, vocab]: the last token's, every new token's, or none.
  // Throws std::out_of_range for a token id >= vocab or a position past max_position_embeddings.
  std::vector<float> forward(std::span<const uint32_t> tokens, LogitRows rows = LogitRows::Last,
                             const ActivationObserver& observer = {});

 private:
  void attention_block(uint32_t layer, const float* x, size_t count, float* out);
  void moe_block(uint32_t layer, const float* x, size_t count, float* out);
  void ensure_cache_capacity(uint64_t tokens);

  CpuWeights weights_;
  std::vector<float> inv_freq_;
  float concentration_ = 1;
  uint64_t position_ = 0;
  uint64_t cache_capacity_ = 0;
  std::vector<std::vector<float>> k_cache_, v_cache_;  // per layer [capacity, kv_heads * D], K rotated
};

}  // namespace gptoss::cpu

#pragma once
// What the CPU engine (and every engine compared with it) reports while it runs: activations at
// the stages transformers' goldens hold, and which rows of logits a forward returns.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

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

}  // namespace gptoss::cpu

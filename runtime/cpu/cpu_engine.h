#pragma once
// The CPU reference engine: the GPT-OSS forward pass on exactly decoded weights, with a KV cache.
// Everything the Vulkan engine computes is checked against this one, and this one against
// transformers (shared/goldens/a/refs-a.safetensors), so it favours clarity and exact reference
// semantics over speed; matrix products still go through OpenBLAS.
//
// Arithmetic: f32 by default (what transformers and the GPU engines compute), or f64 on request
// (CpuPrecision::F64: the same weights widened, every product and sum in double). Two f32
// implementations that sum in different orders drift apart by ~1e-5 relative on preset a's
// random layers (1e-3 absolute on a residual stream of |x| ~ 110); the f64 engine removes its own
// share of that, so it is the sharper ruler for parity work. It costs 8 bytes per parameter.
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "convert/canonical_model.h"
#include "runtime/cpu/cpu_activations.h"
#include "runtime/cpu/cpu_weights.h"

namespace gptoss::cpu {

class ForwardPassBase;

enum class CpuPrecision { F32, F64 };
std::string_view precision_name(CpuPrecision precision);

class CpuEngine {
 public:
  explicit CpuEngine(const CanonicalModel& model, CpuPrecision precision = CpuPrecision::F32);
  explicit CpuEngine(CpuWeights weights, CpuPrecision precision = CpuPrecision::F32);
  ~CpuEngine();
  CpuEngine(CpuEngine&&) noexcept;
  CpuEngine& operator=(CpuEngine&&) noexcept;

  CpuPrecision precision() const { return precision_; }
  const GptOssConfig& config() const;
  uint32_t vocab_size() const { return config().vocab_size; }
  // Tokens held in the KV cache: the position the next token gets.
  uint64_t position() const;
  void reset();

  // Runs `tokens` after everything in the cache (a prefill when the cache is empty, a decode step
  // for one token) and appends them to the cache. Returns the logits of the requested rows,
  // row-major [rows, vocab]: the last token's, every new token's, or none.
  // Throws std::out_of_range for a token id >= vocab or a position past max_position_embeddings.
  std::vector<float> forward(std::span<const uint32_t> tokens, LogitRows rows = LogitRows::Last,
                             const ActivationObserver& observer = {});

 private:
  CpuPrecision precision_;
  std::unique_ptr<ForwardPassBase> pass_;
};

}  // namespace gptoss::cpu

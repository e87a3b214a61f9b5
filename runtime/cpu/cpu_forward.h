#pragma once
// The CPU engine's forward pass, written once for both of its arithmetics: f32 (`float`, the
// default, as transformers computes) and f64 (`double`, the high-precision reference). CpuEngine
// (cpu_engine.h) is the public face; this header is the engine's own.
#include <cstdint>
#include <span>
#include <vector>

#include "runtime/cpu/cpu_weights.h"
#include "runtime/engine.h"

namespace gptoss::cpu {

class ForwardPassBase {
 public:
  virtual ~ForwardPassBase() = default;
  virtual const GptOssConfig& config() const = 0;
  virtual uint64_t position() const = 0;
  virtual void reset() = 0;
  // `tokens` is non-empty and checked, `rows` and `logits` as runtime::Engine::run_forward takes them.
  virtual void forward(std::span<const uint32_t> tokens, runtime::LogitRows rows, std::span<float> logits,
                       const runtime::ActivationObserver& observer) = 0;
};

template <class Real>
class ForwardPass final : public ForwardPassBase {
 public:
  explicit ForwardPass(BasicCpuWeights<Real> weights, runtime::KvCacheType kv_cache = runtime::KvCacheType::F32);

  const GptOssConfig& config() const override { return weights_.config; }
  uint64_t position() const override { return position_; }
  void reset() override { position_ = 0; }
  void forward(std::span<const uint32_t> tokens, runtime::LogitRows rows, std::span<float> logits,
               const runtime::ActivationObserver& observer) override;

 private:
  void attention_block(uint32_t layer, const Real* x, size_t count, Real* out);
  void moe_block(uint32_t layer, const Real* residual, const Real* x, size_t count, Real* out);
  void decode_expert(uint32_t layer, uint64_t expert);
  void ensure_cache_capacity(uint64_t tokens);

  BasicCpuWeights<Real> weights_;
  std::vector<float> inv_freq_;
  float concentration_ = 1;
  uint64_t position_ = 0;
  uint64_t cache_capacity_ = 0;
  std::vector<std::vector<Real>> k_cache_, v_cache_;  // per layer [capacity, kv_heads * D], K rotated
  runtime::KvCacheType kv_cache_type_;  // F16: the cached values rounded to f16 (held in Real)
  // One expert's mlp1 [2I, H] and mlp2 [H, I] decoded from their encoding just before its GEMMs.
  std::vector<Real> mlp1_rows_, mlp2_rows_;
  // The last moe_block's choices, [count, experts_per_token] expert ids (Stage::RouterChoices).
  std::vector<float> router_choices_;
};

extern template class ForwardPass<float>;
extern template class ForwardPass<double>;

}  // namespace gptoss::cpu

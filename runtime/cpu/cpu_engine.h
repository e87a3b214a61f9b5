#pragma once
// The CPU reference engine: the GPT-OSS forward pass on exactly decoded weights, with a KV cache.
// Everything the Vulkan engine computes is checked against this one, and this one against
// transformers (shared/goldens/a/refs-a.safetensors), so it favours clarity and exact reference
// semantics over speed. Its products sum in one fixed order (fixed_order_products.h), so a
// position's logits are the same bits whatever else the forward holds and on any x86-64 machine.
//
// Arithmetic: f32 by default (what transformers and the GPU engines compute), or f64 on request
// (CpuPrecision::F64: the same weights widened, every product and sum in double). Two f32
// implementations that sum in different orders drift apart by ~1e-5 relative on preset a's
// random layers (1e-3 absolute on a residual stream of |x| ~ 110); the f64 engine removes its own
// share of that, so it is the sharper ruler for parity work.
//
// Memory: dense tensors but the embedding are decoded at load, 4 bytes per parameter (f32) or 8
// (f64); the embedding (one row read per token) and the experts (~95% of the parameters at 20b
// and 120b; MXFP4: 0.53 bytes per parameter, or a GGUF's other types) stay stored, and a row or
// one expert at a time is decoded (exactly, so the results are those of decoding everything at
// load) just before use. Totals at the real shapes: docs/cpu-engine.md ("Memory").
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "convert/canonical_model.h"
#include "runtime/cpu/cpu_weights.h"
#include "runtime/engine.h"

namespace gptoss::cpu {

class ForwardPassBase;

enum class CpuPrecision { F32, F64 };
std::string_view precision_name(CpuPrecision precision);

// Made through runtime::make_engine (EngineKind::Cpu / CpuF64); its own tests construct it directly.
class CpuEngine final : public runtime::Engine {
 public:
  // The cache holds at most `max_context` positions (clamped to max_position_embeddings); it grows
  // as tokens arrive, so a large bound costs nothing until it is used. With KvCacheType::F16 each
  // key (after RoPE) and value is rounded to f16 as it is stored.
  explicit CpuEngine(const CanonicalModel& model, CpuPrecision precision = CpuPrecision::F32,
                     uint64_t max_context = UINT64_MAX, runtime::KvCacheType kv_cache = runtime::KvCacheType::F32);
  explicit CpuEngine(CpuWeights weights, CpuPrecision precision = CpuPrecision::F32, uint64_t max_context = UINT64_MAX,
                     runtime::KvCacheType kv_cache = runtime::KvCacheType::F32);
  ~CpuEngine() override;

  CpuPrecision precision() const { return precision_; }
  runtime::EngineKind kind() const override;
  std::string device_description() const override;
  const GptOssConfig& config() const override;
  uint64_t position() const override;
  uint64_t capacity() const override { return capacity_; }
  void reset() override;

 private:
  CpuEngine(std::unique_ptr<ForwardPassBase> pass, CpuPrecision precision, uint64_t max_context);
  void run_forward(std::span<const uint32_t> tokens, runtime::LogitRows rows, std::span<float> logits,
                   const runtime::ActivationObserver& observer) override;

  CpuPrecision precision_;
  std::unique_ptr<ForwardPassBase> pass_;
  uint64_t capacity_;
};

}  // namespace gptoss::cpu

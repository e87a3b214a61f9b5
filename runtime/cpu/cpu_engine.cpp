#include "runtime/cpu/cpu_engine.h"

#include <algorithm>

#include "runtime/cpu/cpu_forward.h"

namespace gptoss::cpu {
namespace {

std::unique_ptr<ForwardPassBase> make_pass(CpuWeights weights, CpuPrecision precision, runtime::KvCacheType kv_cache) {
  if (precision == CpuPrecision::F64)
    return std::make_unique<ForwardPass<double>>(widen_to_f64(std::move(weights)), kv_cache);
  return std::make_unique<ForwardPass<float>>(std::move(weights), kv_cache);
}

// From a model, the f64 engine's weights are decoded straight to double (no f32 copy first).
std::unique_ptr<ForwardPassBase> make_pass(const CanonicalModel& model, CpuPrecision precision,
                                           runtime::KvCacheType kv_cache) {
  if (precision == CpuPrecision::F64)
    return std::make_unique<ForwardPass<double>>(decode_cpu_weights_f64(model), kv_cache);
  return std::make_unique<ForwardPass<float>>(decode_cpu_weights(model), kv_cache);
}

}  // namespace

std::string_view precision_name(CpuPrecision precision) { return precision == CpuPrecision::F64 ? "f64" : "f32"; }

CpuEngine::CpuEngine(const CanonicalModel& model, CpuPrecision precision, uint64_t max_context,
                     runtime::KvCacheType kv_cache)
    : CpuEngine(make_pass(model, precision, kv_cache), precision, max_context) {}

CpuEngine::CpuEngine(CpuWeights weights, CpuPrecision precision, uint64_t max_context, runtime::KvCacheType kv_cache)
    : CpuEngine(make_pass(std::move(weights), precision, kv_cache), precision, max_context) {}

CpuEngine::CpuEngine(std::unique_ptr<ForwardPassBase> pass, CpuPrecision precision, uint64_t max_context)
    : precision_(precision),
      pass_(std::move(pass)),
      capacity_(std::min<uint64_t>(max_context, pass_->config().max_position_embeddings)) {}

CpuEngine::~CpuEngine() = default;

runtime::EngineKind CpuEngine::kind() const {
  return precision_ == CpuPrecision::F64 ? runtime::EngineKind::CpuF64 : runtime::EngineKind::Cpu;
}
std::string CpuEngine::device_description() const { return "CPU (" + std::string(precision_name(precision_)) + ")"; }
const GptOssConfig& CpuEngine::config() const { return pass_->config(); }
uint64_t CpuEngine::position() const { return pass_->position(); }
void CpuEngine::reset() { pass_->reset(); }

void CpuEngine::run_forward(std::span<const uint32_t> tokens, runtime::LogitRows rows, std::span<float> logits,
                            const runtime::ActivationObserver& observer) {
  pass_->forward(tokens, rows, logits, observer);
}

}  // namespace gptoss::cpu

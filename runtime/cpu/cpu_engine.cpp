#include "runtime/cpu/cpu_engine.h"

#include "runtime/cpu/cpu_forward.h"

namespace gptoss::cpu {
namespace {

std::unique_ptr<ForwardPassBase> make_pass(CpuWeights weights, CpuPrecision precision) {
  if (precision == CpuPrecision::F64) return std::make_unique<ForwardPass<double>>(widen_to_f64(std::move(weights)));
  return std::make_unique<ForwardPass<float>>(std::move(weights));
}

}  // namespace

std::string_view precision_name(CpuPrecision precision) { return precision == CpuPrecision::F64 ? "f64" : "f32"; }

CpuEngine::CpuEngine(const CanonicalModel& model, CpuPrecision precision)
    : CpuEngine(decode_cpu_weights(model), precision) {}

CpuEngine::CpuEngine(CpuWeights weights, CpuPrecision precision)
    : precision_(precision), pass_(make_pass(std::move(weights), precision)) {}

CpuEngine::~CpuEngine() = default;
CpuEngine::CpuEngine(CpuEngine&&) noexcept = default;
CpuEngine& CpuEngine::operator=(CpuEngine&&) noexcept = default;

const GptOssConfig& CpuEngine::config() const { return pass_->config(); }
uint64_t CpuEngine::position() const { return pass_->position(); }
void CpuEngine::reset() { pass_->reset(); }

std::vector<float> CpuEngine::forward(std::span<const uint32_t> tokens, LogitRows rows,
                                      const ActivationObserver& observer) {
  return pass_->forward(tokens, rows, observer);
}

}  // namespace gptoss::cpu

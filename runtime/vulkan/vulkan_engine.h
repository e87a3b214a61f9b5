#pragma once
// The Vulkan engine: the GPT-OSS forward pass on a Vulkan device, with weights uploaded once in
// their stored encoding (BF16/F16/F32 and ggml's block quantizations, MXFP4 experts or experts in
// any of those) and decoded inside the kernels,
// and a per-layer KV cache in device memory (f32, or f16 with EngineOptions::kv_cache). It implements runtime::Engine and is
// checked against the CPU reference engine stage by stage (tests/vulkan).
//
// A forward runs in chunks of up to EngineOptions::prefill_chunk tokens (2048 by default; clamped
// to the KV cache), each chunk one batched pass (GEMMs and the prefill attention kernel over all
// its tokens) through a command buffer recorded once per shape (tokens, logit rows, observed,
// greedy) and one vkQueueSubmit; the tokens and the first position are written to a small
// host-visible buffer before the submit. A decode step is a chunk of one token. Shapes the
// prefill attention kernel does not cover run one token per chunk through the decode kernels.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "convert/canonical_model.h"
#include "runtime/engine.h"
#include "runtime/vulkan/vulkan_context.h"

namespace gptoss::vk {

// Made through runtime::make_engine (EngineKind::Vulkan); its own tests construct it directly,
// sharing one Context.
class VulkanEngine final : public runtime::Engine {
 public:
  // Uses `ctx` when given, else creates a context on options.device_index (or the best device).
  // The KV cache holds options.max_context positions (clamped to max_position_embeddings).
  // Throws std::runtime_error when no Vulkan device is usable or a tensor does not fit a
  // storage-buffer binding, and FormatError when a tensor's encoding or size is not what its
  // shape needs.
  explicit VulkanEngine(const CanonicalModel& model, const runtime::EngineOptions& options = {},
                        std::shared_ptr<Context> ctx = nullptr);
  ~VulkanEngine() override;

  runtime::EngineKind kind() const override { return runtime::EngineKind::Vulkan; }
  std::string device_description() const override;
  const GptOssConfig& config() const override;
  const DeviceInfo& device() const;
  uint64_t position() const override { return position_; }
  uint64_t capacity() const override;
  void reset() override { position_ = 0; }
  uint64_t device_memory_bytes() const override;
  // The kernel profile (VulkanTuning::profile) and the pipelines' statistics, as asked.
  std::string diagnostics() const override;

 private:
  void run_forward(std::span<const uint32_t> tokens, runtime::LogitRows rows, std::span<float> logits,
                   const runtime::ActivationObserver& observer) override;
  void run_forward_sequences(std::span<const uint32_t> tokens, uint32_t sequences, runtime::LogitRows rows,
                             std::span<float> logits) override;
  uint32_t run_forward_greedy(std::span<const uint32_t> tokens) override;
  // The mapped readback itself: the device's copy of the logits, never copied again on the host.
  std::span<const float> run_forward_last(std::span<const uint32_t> tokens) override;
  // Host-visible memory of the device that the GEMM over a submit's logit rows writes into directly.
  runtime::LogitMemory allocate_logit_memory(size_t floats) override;

  struct Device;
  std::unique_ptr<Device> device_;
  uint64_t position_ = 0;
};

}  // namespace gptoss::vk

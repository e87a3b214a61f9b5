#pragma once
// The Vulkan engine: the GPT-OSS forward pass on a Vulkan device, with weights uploaded once in
// their stored encoding (BF16/F16/F32/Q8_0 dense, MXFP4 experts) and decoded inside the kernels,
// and a per-layer f32 KV cache in device memory. Same interface as cpu::CpuEngine, and checked
// against it stage by stage (tests/vulkan).
//
// Every token runs through one pre-recorded command buffer (one vkQueueSubmit per token): the
// token id and position are written to a small host-visible buffer before the submit. Prefill
// feeds the prompt through that same decode path token by token (first version: no prefill GEMM).
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "convert/canonical_model.h"
#include "runtime/cpu/cpu_engine.h"
#include "runtime/vulkan/vulkan_context.h"

namespace gptoss::vk {

struct VulkanEngineOptions {
  // KV cache positions allocated on the device (clamped to max_position_embeddings).
  uint32_t max_context = 4096;
};

class VulkanEngine {
 public:
  // Uses `ctx` when given, else creates a context on the best device. Throws std::runtime_error
  // when no Vulkan device is usable or a tensor does not fit a storage-buffer binding, and
  // FormatError when a tensor's encoding or size is not what its shape needs.
  explicit VulkanEngine(const CanonicalModel& model, VulkanEngineOptions options = {},
                        std::shared_ptr<Context> ctx = nullptr);
  ~VulkanEngine();
  VulkanEngine(const VulkanEngine&) = delete;
  VulkanEngine& operator=(const VulkanEngine&) = delete;

  const GptOssConfig& config() const;
  uint32_t vocab_size() const { return config().vocab_size; }
  const DeviceInfo& device() const;
  uint64_t position() const { return position_; }
  uint64_t capacity() const;  // positions the KV cache holds
  void reset() { position_ = 0; }

  // As CpuEngine::forward: runs `tokens` after the cached ones and returns the logits of the
  // requested rows, row-major [rows, vocab]; the observer sees the embedding, every layer's
  // residual and the final norm of all the new tokens (once they all ran).
  // Throws std::out_of_range for a token id >= vocab or a position past capacity().
  std::vector<float> forward(std::span<const uint32_t> tokens, cpu::LogitRows rows = cpu::LogitRows::Last,
                             const cpu::ActivationObserver& observer = {});

 private:
  struct Device;
  std::unique_ptr<Device> device_;
  uint64_t position_ = 0;
};

}  // namespace gptoss::vk

#pragma once
// Uploads of tensors to device-local buffers through one host-visible staging buffer, chunk by
// chunk, so host memory stays bounded by the staging size whatever the tensor size. Bytes go up
// in their stored encoding (BF16/F16/F32/Q8_0 dense, MXFP4 blocks and scales): no decoding here.
#include <cstdint>
#include <memory>
#include <span>

#include "convert/tensor_source.h"
#include "runtime/vulkan/vulkan_context.h"

namespace gptoss::vk {

class DeviceUploader {
 public:
  explicit DeviceUploader(const Context& ctx, uint64_t staging_bytes = 16u << 20);
  // A device-local buffer holding source's bytes (size rounded up to 4 so shaders can read words;
  // the pad is zero).
  std::unique_ptr<Buffer> upload(const TensorSource& source);
  std::unique_ptr<Buffer> upload(std::span<const uint8_t> bytes);
  // Copies bytes into `target` at `offset` (target is device-local or host-visible).
  void write(Buffer& target, uint64_t offset, std::span<const uint8_t> bytes);

 private:
  const Context& ctx_;
  Buffer staging_;
};

}  // namespace gptoss::vk

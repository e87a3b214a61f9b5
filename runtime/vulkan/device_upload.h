#pragma once
// Uploads of tensors to device-local buffers through one host-visible staging buffer, chunk by
// chunk, so host memory stays bounded by the staging size whatever the tensor size. Bytes go up
// in their stored encoding; the only rearrangement is layout (ggml blocks split into quants and
// meta records, several tensors stacked in one buffer), never a decode of a matrix.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "formats/core/tensor_source.h"
#include "runtime/vulkan/vulkan_context.h"

namespace gptoss::vk {

class DeviceUploader {
 public:
  explicit DeviceUploader(const Context& ctx, uint64_t staging_bytes = 16u << 20);
  // A device-local buffer holding source's bytes (size rounded up to 16 so kernels can read
  // 16-byte words; the pad is zero).
  std::unique_ptr<Buffer> upload(const TensorSource& source);
  std::unique_ptr<Buffer> upload(std::span<const uint8_t> bytes);
  // Copies bytes [0, size) of `source` to `target` at `offset`, releasing the source's pages behind.
  void write(Buffer& target, uint64_t offset, const TensorSource& source);
  void write(Buffer& target, uint64_t offset, std::span<const uint8_t> bytes);
  // Where the bytes of one ggml block go: its quants range to the quants array, its meta ranges
  // (in order) to the meta array (shaders/kernel_abi.h's GGML_BLOCK_ENCODINGS).
  struct ByteRange {
    uint32_t offset, size;
  };
  struct BlockSplit {
    uint32_t block_bytes;
    ByteRange quants;
    ByteRange meta[2];
  };
  // Streams `source` (ggml blocks of split.block_bytes) into `target`: the quants of block b to
  // quants_offset + b * quants.size, its meta record to meta_offset + b * (meta sizes).
  void write_blocks_split(Buffer& target, uint64_t quants_offset, uint64_t meta_offset, const TensorSource& source,
                          const BlockSplit& split);

 private:
  // Fills staging with `bytes` produced by `produce` in chunks, copying each to the device.
  void stream(Buffer& target, uint64_t offset, uint64_t bytes, const std::function<void(uint64_t, uint64_t, uint8_t*)>& produce);
  const Context& ctx_;
  Buffer staging_;
};

}  // namespace gptoss::vk

#include "runtime/vulkan/device_upload.h"

#include <algorithm>
#include <cstring>

namespace gptoss::vk {

DeviceUploader::DeviceUploader(const Context& ctx, uint64_t staging_bytes)
    : ctx_(ctx), staging_(ctx, staging_bytes, /*host_visible=*/true) {}

std::unique_ptr<Buffer> DeviceUploader::upload(const TensorSource& source) {
  const uint64_t size = source.size();
  auto buffer = std::make_unique<Buffer>(ctx_, std::max<uint64_t>(4, (size + 3) / 4 * 4), false);
  auto* staging = static_cast<uint8_t*>(staging_.mapped());
  for (uint64_t offset = 0; offset < buffer->size(); offset += staging_.size()) {
    const uint64_t chunk = std::min(staging_.size(), buffer->size() - offset);
    const uint64_t from_source = offset < size ? std::min(chunk, size - offset) : 0;
    if (from_source) source.read(offset, std::span(staging, from_source));
    std::memset(staging + from_source, 0, chunk - from_source);
    ctx_.run_once([&](VkCommandBuffer cb) {
      const VkBufferCopy region{0, offset, chunk};
      vkCmdCopyBuffer(cb, staging_.handle(), buffer->handle(), 1, &region);
    });
    if (from_source) source.release_range(offset, from_source);
  }
  return buffer;
}

std::unique_ptr<Buffer> DeviceUploader::upload(std::span<const uint8_t> bytes) {
  const OwnedSource source(std::vector<uint8_t>(bytes.begin(), bytes.end()));
  return upload(source);
}

void DeviceUploader::write(Buffer& target, uint64_t offset, std::span<const uint8_t> bytes) {
  auto* staging = static_cast<uint8_t*>(staging_.mapped());
  for (uint64_t done = 0; done < bytes.size(); done += staging_.size()) {
    const uint64_t chunk = std::min<uint64_t>(staging_.size(), bytes.size() - done);
    std::memcpy(staging, bytes.data() + done, chunk);
    ctx_.run_once([&](VkCommandBuffer cb) {
      const VkBufferCopy region{0, offset + done, chunk};
      vkCmdCopyBuffer(cb, staging_.handle(), target.handle(), 1, &region);
    });
  }
}

}  // namespace gptoss::vk

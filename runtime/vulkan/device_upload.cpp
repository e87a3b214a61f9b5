#include "runtime/vulkan/device_upload.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace gptoss::vk {

DeviceUploader::DeviceUploader(const Context& ctx, uint64_t staging_bytes)
    : ctx_(ctx), staging_(ctx, staging_bytes, /*host_visible=*/true) {}

void DeviceUploader::stream(Buffer& target, uint64_t offset, uint64_t bytes,
                            const std::function<void(uint64_t, uint64_t, uint8_t*)>& produce) {
  auto* staging = static_cast<uint8_t*>(staging_.mapped());
  for (uint64_t done = 0; done < bytes; done += staging_.size()) {
    const uint64_t chunk = std::min(staging_.size(), bytes - done);
    produce(done, chunk, staging);
    ctx_.run_once([&](VkCommandBuffer cb) {
      const VkBufferCopy region{0, offset + done, chunk};
      vkCmdCopyBuffer(cb, staging_.handle(), target.handle(), 1, &region);
    });
  }
}

std::unique_ptr<Buffer> DeviceUploader::upload(const TensorSource& source) {
  const uint64_t size = source.size();
  auto buffer = std::make_unique<Buffer>(ctx_, std::max<uint64_t>(16, (size + 15) / 16 * 16), false);
  write(*buffer, 0, source);
  if (buffer->size() > size) {
    const std::vector<uint8_t> zeros(buffer->size() - size, 0);
    write(*buffer, size, zeros);
  }
  return buffer;
}

std::unique_ptr<Buffer> DeviceUploader::upload(std::span<const uint8_t> bytes) {
  const OwnedSource source(std::vector<uint8_t>(bytes.begin(), bytes.end()));
  return upload(source);
}

void DeviceUploader::write(Buffer& target, uint64_t offset, const TensorSource& source) {
  stream(target, offset, source.size(), [&](uint64_t at, uint64_t size, uint8_t* out) {
    source.read(at, std::span(out, size));
    source.release_range(at, size);
  });
}

void DeviceUploader::write(Buffer& target, uint64_t offset, std::span<const uint8_t> bytes) {
  stream(target, offset, bytes.size(), [&](uint64_t at, uint64_t size, uint8_t* out) {
    std::memcpy(out, bytes.data() + at, size);
  });
}

void DeviceUploader::write_q8_0_split(Buffer& target, uint64_t quants_offset, uint64_t scales_offset,
                                      const TensorSource& source) {
  constexpr uint64_t kBlockBytes = 34;
  const uint64_t blocks = source.size() / kBlockBytes;
  // Blocks per pass: a staging load of quants and scales together.
  const uint64_t per_pass = staging_.size() / kBlockBytes;
  std::vector<uint8_t> raw(per_pass * kBlockBytes), quants(per_pass * 32), scales(per_pass * 2);
  for (uint64_t first = 0; first < blocks; first += per_pass) {
    const uint64_t n = std::min(per_pass, blocks - first);
    source.read(first * kBlockBytes, std::span(raw.data(), n * kBlockBytes));
    source.release_range(first * kBlockBytes, n * kBlockBytes);
    for (uint64_t b = 0; b < n; ++b) {
      std::memcpy(scales.data() + 2 * b, raw.data() + b * kBlockBytes, 2);
      std::memcpy(quants.data() + 32 * b, raw.data() + b * kBlockBytes + 2, 32);
    }
    write(target, quants_offset + 32 * first, std::span<const uint8_t>(quants.data(), 32 * n));
    write(target, scales_offset + 2 * first, std::span<const uint8_t>(scales.data(), 2 * n));
  }
}

}  // namespace gptoss::vk

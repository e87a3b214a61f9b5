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

void DeviceUploader::write_blocks_split(Buffer& target, uint64_t quants_offset, uint64_t meta_offset,
                                        const TensorSource& source, const BlockSplit& split) {
  const uint64_t block_bytes = split.block_bytes, quant_bytes = split.quants.size;
  const uint64_t meta_bytes = split.meta[0].size + split.meta[1].size;
  const uint64_t blocks = source.size() / block_bytes;
  // Blocks per pass: a staging load of quants and meta together.
  const uint64_t per_pass = staging_.size() / block_bytes;
  std::vector<uint8_t> raw(per_pass * block_bytes), quants(per_pass * quant_bytes), meta(per_pass * meta_bytes);
  for (uint64_t first = 0; first < blocks; first += per_pass) {
    const uint64_t n = std::min(per_pass, blocks - first);
    source.read(first * block_bytes, std::span(raw.data(), n * block_bytes));
    source.release_range(first * block_bytes, n * block_bytes);
    for (uint64_t b = 0; b < n; ++b) {
      const uint8_t* block = raw.data() + b * block_bytes;
      std::memcpy(quants.data() + b * quant_bytes, block + split.quants.offset, quant_bytes);
      uint8_t* record = meta.data() + b * meta_bytes;
      for (const ByteRange& range : split.meta) {
        std::memcpy(record, block + range.offset, range.size);
        record += range.size;
      }
    }
    write(target, quants_offset + quant_bytes * first, std::span<const uint8_t>(quants.data(), quant_bytes * n));
    write(target, meta_offset + meta_bytes * first, std::span<const uint8_t>(meta.data(), meta_bytes * n));
  }
}

}  // namespace gptoss::vk

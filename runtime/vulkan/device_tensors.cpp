#include "runtime/vulkan/device_tensors.h"

#include <algorithm>
#include <vector>

#include "formats/codecs/float_codec.h"
#include "formats/core/checked_math.h"
#include "formats/core/error.h"
#include "shaders/kernel_abi.h"

namespace gptoss::vk {
namespace {

uint64_t element_count(const CanonicalTensor& tensor) {
  const auto count = checked_product(tensor.spec.shape);
  if (!count) throw_format_error(tensor.origin, tensor.spec.name, std::nullopt, "element count overflows");
  return *count;
}

void check_size(const CanonicalTensor& tensor, uint64_t expected) {
  if (tensor.source->size() != expected)
    throw_format_error(tensor.origin, tensor.spec.name, std::nullopt,
                       "holds " + std::to_string(tensor.source->size()) + " bytes, its shape and " +
                           std::string(dtype_name(tensor.dtype)) + " need " + std::to_string(expected));
}

uint64_t round16(uint64_t bytes) { return (bytes + 15) / 16 * 16; }

}  // namespace

std::optional<uint32_t> kernel_encoding(DType dtype) {
  switch (dtype) {
    case DType::F32: return abi::ENC_F32;
    case DType::F16: return abi::ENC_F16;
    case DType::BF16: return abi::ENC_BF16;
    case DType::Q8_0: return abi::ENC_Q8_0;
    default: return std::nullopt;
  }
}

uint64_t device_bytes(const CanonicalTensor& tensor, bool as_vector) {
  if (as_vector) return round16(element_count(tensor) * 4);
  const uint64_t stored = tensor.source->size();
  if (tensor.dtype == DType::Q8_0) return round16(element_count(tensor)) + round16(element_count(tensor) / 16);
  return round16(stored);
}

DeviceMatrix upload_matrix(const Context& ctx, DeviceUploader& uploader, std::span<const CanonicalTensor* const> parts) {
  DeviceMatrix m;
  const CanonicalTensor& first = *parts.front();
  for (const CanonicalTensor* part : parts) {
    const CanonicalTensor& t = *part;
    if (t.spec.shape.size() != 2)
      throw_format_error(t.origin, t.spec.name, std::nullopt, "expected a matrix, found " +
                                                                  std::to_string(t.spec.shape.size()) + " dimensions");
    const auto encoding = kernel_encoding(t.dtype);
    if (!encoding)
      throw_format_error(t.origin, t.spec.name, std::nullopt,
                         "dense tensor stored as " + std::string(dtype_name(t.dtype)) +
                             ", which the Vulkan kernels cannot decode (expected F32, F16, BF16 or Q8_0)");
    if (t.dtype != first.dtype || t.spec.shape[1] != first.spec.shape[1])
      throw_format_error(t.origin, t.spec.name, std::nullopt,
                         "cannot be stacked with " + first.spec.name + " (encodings or widths differ)");
    if (t.spec.shape[1] % 32 != 0)
      throw_format_error(t.origin, t.spec.name, std::nullopt,
                         "rows of " + std::to_string(t.spec.shape[1]) +
                             " values: the Vulkan kernels read rows in blocks of 32 values");
    const auto bytes = dtype_byte_size(t.dtype, element_count(t));
    if (!bytes) throw_format_error(t.origin, t.spec.name, std::nullopt, "size overflows");
    check_size(t, *bytes);
    m.encoding = *encoding;
    m.cols = static_cast<uint32_t>(t.spec.shape[1]);
    m.rows += static_cast<uint32_t>(t.spec.shape[0]);
  }
  const uint64_t elements = uint64_t{m.rows} * m.cols;
  if (m.encoding == abi::ENC_Q8_0) {
    m.scales_offset = round16(elements);
    m.buffer = std::make_unique<Buffer>(ctx, m.scales_offset + round16(elements / 32 * 2), false);
    uint64_t row = 0;
    for (const CanonicalTensor* part : parts) {
      uploader.write_q8_0_split(*m.buffer, row * m.cols, m.scales_offset + row * m.cols / 32 * 2, *part->source);
      row += part->spec.shape[0];
    }
  } else {
    uint64_t total = 0;
    for (const CanonicalTensor* part : parts) total += part->source->size();
    m.buffer = std::make_unique<Buffer>(ctx, round16(total), false);
    uint64_t offset = 0;
    for (const CanonicalTensor* part : parts) {
      uploader.write(*m.buffer, offset, *part->source);
      offset += part->source->size();
    }
  }
  return m;
}

DeviceMatrix upload_matrix(const Context& ctx, DeviceUploader& uploader, const CanonicalTensor& tensor) {
  const CanonicalTensor* parts[] = {&tensor};
  return upload_matrix(ctx, uploader, parts);
}

std::unique_ptr<Buffer> upload_vector(const Context& ctx, DeviceUploader& uploader,
                                      std::span<const CanonicalTensor* const> parts) {
  (void)ctx;  // the uploader's context allocates
  std::vector<float> values;
  for (const CanonicalTensor* part : parts) {
    const CanonicalTensor& t = *part;
    if (!kernel_encoding(t.dtype))
      throw_format_error(t.origin, t.spec.name, std::nullopt,
                         "stored as " + std::string(dtype_name(t.dtype)) +
                             ", which the Vulkan engine cannot decode (expected F32, F16, BF16 or Q8_0)");
    const uint64_t n = element_count(t);
    const auto bytes = dtype_byte_size(t.dtype, n);
    if (!bytes) throw_format_error(t.origin, t.spec.name, std::nullopt, "size overflows");
    check_size(t, *bytes);
    std::vector<uint8_t> raw(*bytes);
    t.source->read(0, raw);
    const size_t at = values.size();
    values.resize(at + n);
    decode_to_f32(t.dtype, raw.data(), n, values.data() + at);
  }
  return uploader.upload(std::span(reinterpret_cast<const uint8_t*>(values.data()), values.size() * 4));
}

std::unique_ptr<Buffer> upload_vector(const Context& ctx, DeviceUploader& uploader, const CanonicalTensor& tensor) {
  const CanonicalTensor* parts[] = {&tensor};
  return upload_vector(ctx, uploader, parts);
}

DeviceExperts upload_experts(const Context& ctx, DeviceUploader& uploader, const CanonicalTensor& blocks,
                             const CanonicalTensor& scales) {
  (void)ctx;
  if (blocks.dtype != DType::U8 || scales.dtype != DType::U8)
    throw_format_error(blocks.origin, blocks.spec.name, std::nullopt, "MXFP4 experts must be U8 blocks and scales");
  if (scales.spec.shape.size() != 3)
    throw_format_error(scales.origin, scales.spec.name, std::nullopt, "expected [experts, rows, blocks] scales");
  const uint64_t block_count = element_count(scales);
  if (element_count(blocks) != block_count * 16)
    throw_format_error(blocks.origin, blocks.spec.name, std::nullopt,
                       "blocks and scales disagree on the number of MXFP4 blocks");
  check_size(blocks, block_count * 16);
  check_size(scales, block_count);
  DeviceExperts e;
  e.experts = static_cast<uint32_t>(scales.spec.shape[0]);
  e.rows = static_cast<uint32_t>(scales.spec.shape[1]);
  e.cols = static_cast<uint32_t>(scales.spec.shape[2] * 32);
  e.blocks = uploader.upload(*blocks.source);
  e.scales = uploader.upload(*scales.source);
  return e;
}

}  // namespace gptoss::vk

#include "runtime/vulkan/device_tensors.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <vector>

#include "formats/codecs/float_codec.h"
#include "formats/codecs/ggml_quants.h"
#include "formats/codecs/iq_grids.h"
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

namespace {
#define BLOCK_ENCODING_ENTRY(T, ID, BLOCK, Q, QN, M0, M0N, M1, M1N, GRID) \
  BlockEncoding{DType::T, abi::ENC_##T, BLOCK, {QN + M0N + M1N, {Q, QN}, {{M0, M0N}, {M1, M1N}}}, GRID},
constexpr BlockEncoding kBlockEncodings[] = {GGML_BLOCK_ENCODINGS(BLOCK_ENCODING_ENTRY)};
#undef BLOCK_ENCODING_ENTRY

template <class T, size_t N>
std::span<const uint8_t> bytes_of(const T (&table)[N]) {
  return {reinterpret_cast<const uint8_t*>(table), sizeof table};
}

const BlockEncoding* block_encoding_of(DType type) {
  for (const auto& e : kBlockEncodings)
    if (e.type == type) return &e;
  return nullptr;
}

// Bytes of a block-type matrix of `elements` on the device: the table, then the quants and the
// meta records, each array padded to 16 bytes.
struct BlockLayout {
  uint64_t quants_offset, meta_offset, size;
};
BlockLayout block_layout(const BlockEncoding& e, uint64_t elements) {
  const uint64_t blocks = elements / e.block_elements;
  const uint64_t meta_offset = e.grid_bytes + round16(blocks * e.split.quants.size);
  return {e.grid_bytes, meta_offset, meta_offset + round16(blocks * (e.split.meta[0].size + e.split.meta[1].size))};
}
}  // namespace

std::span<const BlockEncoding> block_encodings() { return kBlockEncodings; }

const BlockEncoding* block_encoding(uint32_t encoding) {
  for (const auto& e : kBlockEncodings)
    if (e.encoding == encoding) return &e;
  return nullptr;
}

std::span<const uint8_t> encoding_grid(DType type) {
  switch (type) {
    case DType::IQ4_NL: case DType::IQ4_XS: return bytes_of(ggml_quants::kIq4nlValues);
    case DType::IQ3_S: return bytes_of(iq_grids::kIq3s);
    case DType::IQ3_XXS: return bytes_of(iq_grids::kIq3xxs);
    case DType::IQ2_S: return bytes_of(iq_grids::kIq2s);
    case DType::IQ2_XS: return bytes_of(iq_grids::kIq2xs);
    case DType::IQ2_XXS: return bytes_of(iq_grids::kIq2xxs);
    case DType::IQ1_S: case DType::IQ1_M: return bytes_of(iq_grids::kIq1s);
    default: return {};
  }
}

std::string encoding_name(uint32_t encoding) {
  switch (encoding) {
    case abi::ENC_F32: return "f32";
    case abi::ENC_F16: return "f16";
    case abi::ENC_BF16: return "bf16";
    case abi::ENC_MXFP4: return "mxfp4";
    default: break;
  }
  const BlockEncoding* block = block_encoding(encoding);
  if (!block) return "encoding " + std::to_string(encoding);
  std::string name(dtype_name(block->type));
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

std::optional<uint32_t> kernel_encoding(DType dtype) {
  switch (dtype) {
    case DType::F32: return abi::ENC_F32;
    case DType::F16: return abi::ENC_F16;
    case DType::BF16: return abi::ENC_BF16;
    default: break;
  }
  if (const BlockEncoding* block = block_encoding_of(dtype)) return block->encoding;
  return std::nullopt;
}

uint64_t device_bytes(const CanonicalTensor& tensor, bool as_vector) {
  if (as_vector) return round16(element_count(tensor) * 4);
  if (const BlockEncoding* block = block_encoding_of(tensor.dtype)) return block_layout(*block, element_count(tensor)).size;
  return round16(tensor.source->size());
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
                             ", which the Vulkan kernels cannot decode (expected F32, F16, BF16 or one of ggml's "
                             "quantizations Q8_0 .. IQ1_M)");
    if (t.dtype != first.dtype || t.spec.shape[1] != first.spec.shape[1])
      throw_format_error(t.origin, t.spec.name, std::nullopt,
                         "cannot be stacked with " + first.spec.name + " (encodings or widths differ)");
    const BlockEncoding* block = block_encoding(*encoding);
    const uint64_t row_block = std::max<uint64_t>(32, block ? block->block_elements : 1);
    if (t.spec.shape[1] % row_block != 0)
      throw_format_error(t.origin, t.spec.name, std::nullopt,
                         "rows of " + std::to_string(t.spec.shape[1]) + " values: the Vulkan kernels read rows in " +
                             (row_block == 32 ? std::string("blocks of 32 values")
                                              : "whole " + std::string(dtype_name(t.dtype)) + " blocks of " +
                                                    std::to_string(row_block) + " values"));
    const auto bytes = dtype_byte_size(t.dtype, element_count(t));
    if (!bytes) throw_format_error(t.origin, t.spec.name, std::nullopt, "size overflows");
    check_size(t, *bytes);
    m.encoding = *encoding;
    m.cols = static_cast<uint32_t>(t.spec.shape[1]);
    m.rows += static_cast<uint32_t>(t.spec.shape[0]);
  }
  const uint64_t elements = uint64_t{m.rows} * m.cols;
  if (const BlockEncoding* block = block_encoding(m.encoding)) {
    // [table | quants | meta records], each part's blocks after the previous part's.
    const BlockLayout layout = block_layout(*block, elements);
    const auto grid = encoding_grid(block->type);
    if (grid.size() != block->grid_bytes)
      throw std::logic_error("GGML_BLOCK_ENCODINGS gives " + std::string(dtype_name(block->type)) + " a table of " +
                             std::to_string(block->grid_bytes) + " bytes; formats/codecs has " +
                             std::to_string(grid.size()));
    if (block->split.block_bytes != dtype_info(block->type).block_bytes)
      throw std::logic_error("GGML_BLOCK_ENCODINGS splits " + std::string(dtype_name(block->type)) + " blocks of " +
                             std::to_string(block->split.block_bytes) + " bytes; ggml's are " +
                             std::to_string(dtype_info(block->type).block_bytes));
    m.scales_offset = layout.meta_offset;
    m.buffer = std::make_unique<Buffer>(ctx, layout.size, false);
    if (!grid.empty()) uploader.write(*m.buffer, 0, grid);
    const uint64_t quant_bytes = block->split.quants.size, meta_bytes = block->split.meta[0].size + block->split.meta[1].size;
    uint64_t first_block = 0;
    for (const CanonicalTensor* part : parts) {
      uploader.write_blocks_split(*m.buffer, layout.quants_offset + first_block * quant_bytes,
                                  layout.meta_offset + first_block * meta_bytes, *part->source, block->split);
      first_block += part->spec.shape[0] * m.cols / block->block_elements;
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
                             ", which the Vulkan engine cannot decode (expected F32, F16, BF16 or one of ggml's "
                             "quantizations Q8_0 .. IQ1_M)");
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
  if (!holds_mxfp4(blocks)) {
    if (blocks.spec.shape.size() != 3)
      throw_format_error(blocks.origin, blocks.spec.name, std::nullopt, "expected an [experts, rows, cols] matrix");
    CanonicalTensor flat = blocks;
    flat.spec.shape = {blocks.spec.shape[0] * blocks.spec.shape[1], blocks.spec.shape[2]};
    DeviceMatrix m = upload_matrix(ctx, uploader, flat);
    DeviceExperts e;
    e.encoding = m.encoding;
    e.experts = static_cast<uint32_t>(blocks.spec.shape[0]);
    e.rows = static_cast<uint32_t>(blocks.spec.shape[1]);
    e.cols = m.cols;
    e.blocks = std::move(m.buffer);
    e.scales_offset = m.scales_offset;
    return e;
  }
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

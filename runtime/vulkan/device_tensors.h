#pragma once
// The model's weights on the device, each in its stored encoding: dense matrices (F32, F16, BF16
// as stored; ggml's block quantizations, Q8_0 .. IQ1_M, with each block's bytes split into a
// quants array and a meta array, after the type's lookup table: shaders/kernel_abi.h's
// GGML_BLOCK_ENCODINGS), expert matrices (the MXFP4 pair as stored, or experts in another type
// as one matrix laid out as a dense one), and the vectors
// (norm scales, biases, sinks), which are widened to f32 once at upload: they are 0.02% of the
// bytes and every kernel then reads them without a branch per encoding.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "convert/canonical_model.h"
#include "runtime/vulkan/device_upload.h"
#include "runtime/vulkan/vulkan_context.h"
#include "shaders/kernel_abi.h"

namespace gptoss::vk {

struct DeviceMatrix {
  uint32_t encoding = 0;  // abi::ENC_*
  uint32_t rows = 0, cols = 0;
  std::unique_ptr<Buffer> buffer;
  uint64_t scales_offset = 0;  // block types: where the meta records start in `buffer`
  uint64_t address() const { return buffer->address(); }
  uint64_t scales_address() const { return encoding >= abi::ENC_Q8_0 ? buffer->address() + scales_offset : 0; }
};

// One of ggml's block encodings on the device, from GGML_BLOCK_ENCODINGS: the type, its block
// shape, where each block's bytes go (split.block_bytes: the sum of the ranges, every byte in one),
// and the bytes of the lookup table the kernels read before the quants (0 for none).
struct BlockEncoding {
  DType type;
  uint32_t encoding;  // abi::ENC_*
  uint32_t block_elements;
  DeviceUploader::BlockSplit split;
  uint32_t grid_bytes;
};
std::span<const BlockEncoding> block_encodings();
const BlockEncoding* block_encoding(uint32_t encoding);  // nullptr for F32, F16, BF16
// The table GRID bytes of the type's entry hold (formats/codecs: IQ4's levels, the IQ grids); empty
// for the types without one.
std::span<const uint8_t> encoding_grid(DType type);
// "f32", "bf16", "q4_k": the encoding's name in profiles and messages.
std::string encoding_name(uint32_t encoding);

struct DeviceExperts {
  uint32_t encoding = abi::ENC_MXFP4;  // the OpenAI pair, or a dense encoding (one matrix [experts * rows, cols])
  uint32_t experts = 0, rows = 0, cols = 0;  // each expert's matrix is [rows, cols]
  std::unique_ptr<Buffer> blocks, scales;  // the pair; another encoding: its matrix in `blocks`, no `scales`
  uint64_t scales_offset = 0;              // another block encoding: where its meta records start in `blocks`
  uint64_t blocks_address() const { return blocks->address(); }
  uint64_t scales_address() const { return scales ? scales->address() : blocks->address() + scales_offset; }
};

// The encoding the kernels read for a stored dtype, or nullopt.
std::optional<uint32_t> kernel_encoding(DType dtype);

// Device bytes a tensor takes once uploaded (what upload_* below allocate; `as_vector`: widened
// to f32 by upload_vector), for the memory check made before any upload.
uint64_t device_bytes(const CanonicalTensor& tensor, bool as_vector);

// `parts` stacked by rows into one matrix (Q, K and V as one product); all of one encoding and
// width. Throws FormatError naming the tensor when its encoding, size or width does not fit.
DeviceMatrix upload_matrix(const Context& ctx, DeviceUploader& uploader, std::span<const CanonicalTensor* const> parts);
DeviceMatrix upload_matrix(const Context& ctx, DeviceUploader& uploader, const CanonicalTensor& tensor);
// Several 1-D tensors concatenated, as f32.
std::unique_ptr<Buffer> upload_vector(const Context& ctx, DeviceUploader& uploader,
                                      std::span<const CanonicalTensor* const> parts);
std::unique_ptr<Buffer> upload_vector(const Context& ctx, DeviceUploader& uploader, const CanonicalTensor& tensor);
// An expert pair (blocks, scales), or experts in another type (canonical_model.h: the matrix in
// `blocks`, `scales` empty), uploaded as one matrix [experts * rows, cols] like a dense one.
DeviceExperts upload_experts(const Context& ctx, DeviceUploader& uploader, const CanonicalTensor& blocks,
                             const CanonicalTensor& scales);

}  // namespace gptoss::vk

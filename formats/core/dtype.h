#pragma once
// The element and block types every format of the toolkit can store, with the size arithmetic
// and the decoder to f32 that go with them: one table (dtype.cpp), as ggml's type traits. Block
// types (ggml's quantizations, F4, F6) store a fixed number of elements in a fixed number of bytes;
// a tensor of such a type must hold a whole number of blocks in each row.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace gptoss {

enum class DType : uint8_t {
  F64, F32, F16, BF16,
  I64, I32, I16, I8,
  U64, U32, U16, U8,
  BOOL,
  F8_E4M3, F8_E5M2, E8M0,
  F8_E4M3FNUZ, F8_E5M2FNUZ, F4, F6_E2M3, F6_E3M2, C64,
  Q8_0,   // ggml: f16 scale + 32 x int8 = 34 bytes per 32 elements
  MXFP4,  // ggml: e8m0 scale byte + 16 bytes of nibbles = 17 bytes per 32 elements
  // ggml's other quantizations (layouts in formats/codecs/ggml_quants.h), every one llama-quantize
  // can write; the last four are sized but not decoded.
  Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL,
  Q2_K, Q3_K, Q4_K, Q5_K, Q6_K,
  IQ4_XS, IQ3_S, IQ3_XXS, IQ2_S, IQ2_XS, IQ2_XXS, IQ1_S, IQ1_M,
  Q8_1, Q8_K, TQ1_0, TQ2_0,
};

inline constexpr int kDTypeCount = static_cast<int>(DType::TQ2_0) + 1;

// Decodes `n_blocks` consecutive blocks (block_elements values each) to f32.
using BlockDecoder = void (*)(const uint8_t* blocks, size_t n_blocks, float* out);
// Encodes `n_blocks` blocks of f32 values, as ggml's reference quantizer of the type does.
using BlockEncoder = void (*)(const float* in, size_t n_blocks, uint8_t* blocks);

struct DTypeInfo {
  DType type;
  std::string_view name;              // our name, used in messages and manifests
  std::string_view safetensors_name;  // empty when safetensors has no such dtype
  int ggml_type;                      // -1 when GGUF has no such type
  uint32_t block_elements;            // 1 for plain scalars
  uint32_t block_bytes;
  bool is_float;                      // holds real numbers
  BlockDecoder decode;                // nullptr when the toolkit cannot decode it to f32
  BlockEncoder encode = nullptr;      // block types with a quantizer; nullptr for the others
};

const DTypeInfo& dtype_info(DType type);
inline std::string_view dtype_name(DType type) { return dtype_info(type).name; }

std::optional<DType> dtype_from_safetensors_name(std::string_view name);
std::optional<DType> dtype_from_ggml_type(uint32_t ggml_type);  // nullopt for ids ggml never assigned or removed
std::optional<DType> dtype_from_name(std::string_view name);  // our names, case-insensitive

// Bytes needed for `elements` elements; nullopt on overflow or when `elements` is not a whole
// number of blocks.
std::optional<uint64_t> dtype_byte_size(DType type, uint64_t elements);

// Bytes of one row of `row_elements` elements (the innermost dimension); nullopt as above.
inline std::optional<uint64_t> dtype_row_bytes(DType type, uint64_t row_elements) {
  return dtype_byte_size(type, row_elements);
}

// The OpenAI MXFP4 pair: a tensor of N elements (N a multiple of 32) is stored as
// N/32 blocks of 16 bytes (two 4-bit codes per byte, low nibble = even element) plus N/32
// E8M0 scale bytes.
inline constexpr uint32_t kMxfp4BlockElements = 32;
inline constexpr uint32_t kMxfp4OaiBlockBytes = 16;
inline constexpr uint32_t kMxfp4GgmlBlockBytes = 17;
// Bytes of the OpenAI MXFP4 pair holding `elements` values; nullopt when `elements` is not a
// multiple of 32 (both sizes are at most elements / 2, so they cannot overflow). The ggml MXFP4 type holds the same pair interleaved
// (scale byte + 16 code bytes per block): blocks + scales == dtype_byte_size(MXFP4, elements).
struct Mxfp4PairBytes {
  uint64_t blocks;  // elements / 2: the 16-byte code blocks
  uint64_t scales;  // elements / 32: one E8M0 byte per block
};
std::optional<Mxfp4PairBytes> mxfp4_pair_byte_size(uint64_t elements);

inline constexpr uint32_t kQ8_0BlockElements = 32;
inline constexpr uint32_t kQ8_0BlockBytes = 34;

}  // namespace gptoss

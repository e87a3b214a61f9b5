#pragma once
// The ggml tensor types a GGUF file may name, with their block geometry, so the container reader
// can size and validate every tensor of any GGUF (not only the types this toolkit converts).
#include <cstdint>
#include <optional>
#include <string_view>

#include "formats/core/dtype.h"

namespace gptoss {

struct GgmlTypeInfo {
  uint32_t id;
  std::string_view name;
  uint32_t block_elements;
  uint32_t block_bytes;
};

// nullptr for ids ggml never assigned or has removed (4, 5, 31-33, 36-38) and for ids we do not know.
const GgmlTypeInfo* ggml_type_info(uint32_t id);

// The ggml type id of a DType (F32 0, F16 1, Q8_0 8, BF16 30, MXFP4 39, ...), nullopt when GGUF has none.
std::optional<uint32_t> ggml_type_of(DType type);

}  // namespace gptoss

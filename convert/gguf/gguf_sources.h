#pragma once
// Streaming transforms between the canonical tensors and GGUF's gpt-oss tensors. Each is a
// RowSource: it produces the rows a reader asks for from bounded reads of its parents, so a
// conversion never holds a whole tensor.
//   - gate/up: canonical mlp1 rows interleave gate (even) and up (odd); GGUF stores them apart.
//   - MXFP4: canonical = OpenAI pair (16-byte blocks, low nibble = even element, separate scale
//     bytes); GGUF = ggml 17-byte blocks (scale byte, then byte j = element j | element j+16 << 4).
#include <cstdint>

#include "formats/core/tensor_source.h"

namespace gptoss {

// Units of `unit_bytes`: output unit k = source unit (stride * k + phase).
TensorSourcePtr make_strided_units(TensorSourcePtr source, uint64_t unit_bytes, uint64_t stride, uint64_t phase);
// Units alternate between two equal-size sources: a[0], b[0], a[1], b[1], ...
TensorSourcePtr make_interleaved_units(TensorSourcePtr a, TensorSourcePtr b, uint64_t unit_bytes);

// ggml MXFP4 rows of `blocks_per_row` blocks from the OpenAI pair; output row r is the pair's
// row (stride * r + phase) (stride 2 picks gate/up out of mlp1).
TensorSourcePtr make_ggml_mxfp4_rows(TensorSourcePtr oai_blocks, TensorSourcePtr oai_scales, uint64_t blocks_per_row,
                                     uint64_t stride, uint64_t phase);
// The OpenAI blocks (16 bytes per block) or scales (1 byte per block) of ggml MXFP4 rows.
TensorSourcePtr make_oai_blocks_from_ggml(TensorSourcePtr ggml_rows, uint64_t blocks_per_row);
TensorSourcePtr make_oai_scales_from_ggml(TensorSourcePtr ggml_rows, uint64_t blocks_per_row);

}  // namespace gptoss

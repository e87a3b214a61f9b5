#pragma once
// The byte transforms between the canonical layout and model.bin, as lazy TensorSources:
//  - Q/K rows: inside every head, canonical RoPE half-split order (i, i + D/2) <-> model.bin's
//    interleaved order (row 2i = canonical i, row 2i+1 = canonical i + D/2), combined with the
//    softmax prescale folded into the BF16 values (Q x0.5, K x0.25; undone with x2, x4);
//  - MXFP4 scale bytes: model.bin stores checkpoint byte + 14 (the Metal kernels' fp4 decode
//    carries a 2^-14 factor).
#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "formats/core/tensor_source.h"

namespace gptoss {

enum class QkDirection { ToModelBin, ToCanonical };

// `source` holds `rows` BF16 rows of `row_bytes` each (a weight [rows, in] or a bias [rows], row
// = 2 bytes), heads of `head_dim` rows back to back. Each value is multiplied by `scale` in f32
// and rounded to BF16 (as torch does); `inexact` (may be null) counts values whose product is not
// exact (subnormals), so the caller can report it.
TensorSourcePtr make_qk_transform(TensorSourcePtr source, uint64_t rows, uint64_t row_bytes, uint32_t head_dim,
                                  QkDirection direction, float scale,
                                  std::shared_ptr<std::atomic<uint64_t>> inexact = nullptr);

// Adds `delta` (+14 or -14) to every byte. A byte that would leave 0..255 throws FormatError
// naming `file`, `field`, the byte's index in the source and, when the source is a range of a
// file starting at `file_base`, its absolute offset.
TensorSourcePtr make_scale_offset(TensorSourcePtr source, int delta, std::string file, std::string field,
                                  std::optional<uint64_t> file_base);

}  // namespace gptoss

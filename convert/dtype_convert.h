#pragma once
// Re-encoding a dense tensor (BF16, F16, F32, Q8_0 ...) as another float encoding, row by row
// while streaming, with the error measured on the way: every lossy step is reported with
// numbers, never silent.
#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "formats/core/dtype.h"
#include "formats/core/tensor_source.h"

namespace gptoss {

struct ConversionStats {
  std::mutex mutex;
  uint64_t elements = 0;
  uint64_t changed = 0;      // elements whose value differs after the round trip
  double max_abs_error = 0;  // |decoded(target) - source value|
  double max_abs_value = 0;
  void merge(uint64_t n, uint64_t n_changed, double err, double value);
};

// Source of `from` values re-encoded as `to`. `row_elements` is the innermost dimension
// (a multiple of 32 when either side is a block type). Stats may be null.
TensorSourcePtr convert_dtype(TensorSourcePtr source, DType from, DType to, uint64_t row_elements,
                              std::shared_ptr<ConversionStats> stats = nullptr);

// True when every value of `from` is exactly representable in `to` (e.g. BF16 -> F32).
bool conversion_is_exact(DType from, DType to);

}  // namespace gptoss

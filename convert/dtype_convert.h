#pragma once
// Re-encoding a dense tensor (BF16, F16, F32, Q8_0 ...) as another float encoding, row by row
// while streaming, with the error measured on the way: every lossy step is reported with
// numbers, never silent.
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

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

// A lossy re-encoding a writer streams: the tensor, both encodings, and the error measured while
// the tensor is written.
struct LossyStep {
  std::string name;
  DType from, to;
  std::shared_ptr<ConversionStats> stats;
};

// convert_dtype with the step declared: appended to `lossy` (with fresh stats) unless exact.
TensorSourcePtr convert_declared(std::vector<LossyStep>& lossy, const std::string& name, TensorSourcePtr source,
                                 DType from, DType to, uint64_t row_elements);

// One note per step that changed a value, once the writer has streamed them: "NAME: FROM -> TO
// changed N of M values, max abs error E (max abs value V)".
void append_lossy_notes(const std::vector<LossyStep>& lossy, std::vector<std::string>& notes);

// The OpenAI MXFP4 pair of a matrix held in another type: rows of `row_elements` (a multiple of
// 32) `from` values, each decoded and its blocks quantized by ggml's rule (mxfp4::quantize_oai)
// as the rows stream. The blocks (16 bytes per 32 values) measure the error into `stats` (may be
// null); the scales (one byte per 32 values) decode the rows again but only take each block's
// scale byte (mxfp4::shared_exponents), the cheap part of the quantizer.
struct Mxfp4PairSources {
  TensorSourcePtr blocks, scales;
};
Mxfp4PairSources quantize_mxfp4_pair(TensorSourcePtr source, DType from, uint64_t row_elements,
                                     std::shared_ptr<ConversionStats> stats);

}  // namespace gptoss

#pragma once
// How far two encodings of the same dense tensor may differ when the difference comes only from
// the lossy step one side declares by its encoding, element by element:
//   same encoding on both sides   no difference at all;
//   F32/F64                       exact;
//   BF16                          half an ulp: |x| 2^-8;
//   F16                           half an ulp: |x| 2^-11, plus 2^-25 for subnormals;
//   Q8_0                          half a quantization step of the block: (amax/127) (1/2 + 127 2^-11)
//                                 + 127 2^-25, where amax is the other side's block maximum and
//                                 127 2^-11 covers the scale's rounding to f16;
//   MXFP4                         half a step of the block's grid, or the clipping above its top
//                                 level: with d = 2^(floor(log2 amax) - 3) (amax the other side's
//                                 block maximum; ggml's rule puts the levels at 0, 1, 2, 3, 4, 6, 8,
//                                 12 times d, or times 2d where log2f rounds amax up to the next
//                                 power of two), d for |x| <= 8d, else max(2d, |x| - 12d); |x|
//                                 itself where amax < 2^-125 (ggml's rule writes zeros there).
// Either side may be the source (Q8_0 -> BF16 dequantizes and rounds again), so the allowances of
// both sides add up. NaN is never a rounding.
//
// ggml's other quantizations (Q4_0 .. IQ1_M) have no such bound per element: their quantizers
// search scales that clip outliers and, for the i-quants, snap groups of 8 to a lattice. Their
// declared loss is the tensor's relative RMS error, sqrt(sum (a-b)^2 / sum a^2), up to
// rms_error_ceiling of the type: 3 x 2^-(bpw-1) (bpw = bits per weight of the type), at most 0.9.
// A uniform quantizer of b bits spread over +-3 sigma gives sqrt(3)/2 x 2^-(b-1) on Gaussian
// weights, so the ceiling is about 3.5 times that; a tensor that is not an approximation of the
// other at all (unrelated values of the same scale) gives about 1.4, all zeros 1.
#include <cstdint>

#include "convert/canonical_model.h"

namespace gptoss {

struct DeclaredLossMeasure {
  double max_abs_error = 0;  // max |a - b| (infinity with a NaN)
  double max_reference = 0;  // max |a|
  uint64_t nan = 0;          // elements where either side is NaN
  uint64_t beyond = 0;       // elements whose error exceeds the allowance
  uint64_t first_beyond = 0;
  double first_beyond_error = 0, first_beyond_allowance = 0;
  double sum_squared_error = 0, sum_squared_reference = 0;  // over the elements that are not NaN
  double relative_rms_error() const;  // sqrt(sum_squared_error / sum_squared_reference)
};

// True for the encodings whose loss is bounded per element (above): exact, BF16, F16, Q8_0, MXFP4.
bool has_per_element_bound(DType dtype);
// The largest relative RMS error a tensor stored as `dtype` may have (0 for per-element types).
double rms_error_ceiling(DType dtype);

// Compares the first `rows` rows of two dense tensors with the same row length.
DeclaredLossMeasure measure_declared_loss(const CanonicalTensor& a, const CanonicalTensor& b, uint64_t rows);

}  // namespace gptoss

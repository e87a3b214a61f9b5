#pragma once
// How far two encodings of the same dense tensor may differ when the difference comes only from
// the lossy step one side declares by its encoding, element by element:
//   same encoding on both sides   no difference at all;
//   F32/F64                       exact;
//   BF16                          half an ulp: |x| 2^-8;
//   F16                           half an ulp: |x| 2^-11, plus 2^-25 for subnormals;
//   Q8_0                          half a quantization step of the block: (amax/127) (1/2 + 127 2^-11)
//                                 + 127 2^-25, where amax is the other side's block maximum and
//                                 127 2^-11 covers the scale's rounding to f16.
// Either side may be the source (Q8_0 -> BF16 dequantizes and rounds again), so the allowances of
// both sides add up. NaN is never a rounding.
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
};

// Compares the first `rows` rows of two dense tensors with the same row length.
DeclaredLossMeasure measure_declared_loss(const CanonicalTensor& a, const CanonicalTensor& b, uint64_t rows);

}  // namespace gptoss

#pragma once
// Decoding any float-valued dtype to f32 and encoding f32 to one, a whole number of blocks at a
// time. This is the single place that knows how each float encoding maps to numbers.
#include <cstddef>
#include <cstdint>

#include "formats/core/dtype.h"

namespace gptoss {

// True for dtypes decode_to_f32 / encode_from_f32 handle: F32, F16, BF16, F64, Q8_0, MXFP4 (ggml).
bool is_decodable(DType type);
bool is_encodable(DType type);  // F32, F16, BF16, Q8_0

// `elements` must be a multiple of the dtype's block size.
void decode_to_f32(DType type, const uint8_t* in, size_t elements, float* out);
void encode_from_f32(DType type, const float* in, size_t elements, uint8_t* out);

// How values changed by an encoding: `decoded` is `values` encoded and decoded again. Merges
// into `d`: elements that differ (a NaN difference counts), the largest |decoded - value| and the
// largest |value| (NaN never counts as largest), both computed exactly in double.
struct ValueDifferences {
  uint64_t changed = 0;
  double max_abs_error = 0;
  double max_abs_value = 0;
};
void measure_differences(const float* values, const float* decoded, size_t elements, ValueDifferences& d);

// Multiplies each of `elements` BF16 values by `scale` in f32 and rounds back to BF16 (as torch
// does). Returns how many results, multiplied by 1/scale, no longer give the value (subnormals).
uint64_t scale_bf16_in_place(uint8_t* bf16, size_t elements, float scale);

}  // namespace gptoss

#pragma once
// Decoding any float-valued dtype to f32 and encoding f32 to one, a whole number of blocks at a
// time. The decoders are named in the DType table (formats/core/dtype.cpp): the plain float
// encodings here, ggml's block types in q8_0.h, mxfp4.h and ggml_quants.h.
#include <cstddef>
#include <cstdint>

#include "formats/core/dtype.h"

namespace gptoss {

// True for dtypes decode_to_f32 handles: those with a decoder in the DType table (F32, F16, BF16,
// F64, and every ggml block type but Q8_1, Q8_K, TQ1_0 and TQ2_0).
bool is_decodable(DType type);
// True for dtypes encode_from_f32 handles: F32, F16, BF16 and the block types with an encoder in
// the DType table (Q8_0, MXFP4, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K: ggml's reference quantizers).
bool is_encodable(DType type);

// `elements` must be a multiple of the dtype's block size.
void decode_to_f32(DType type, const uint8_t* in, size_t elements, float* out);
void encode_from_f32(DType type, const float* in, size_t elements, uint8_t* out);

// The decoders of the plain float encodings (`n` values each), for the DType table.
void decode_f32_values(const uint8_t* in, size_t n, float* out);
void decode_f16_values(const uint8_t* in, size_t n, float* out);
void decode_bf16_values(const uint8_t* in, size_t n, float* out);
void decode_f64_values(const uint8_t* in, size_t n, float* out);

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

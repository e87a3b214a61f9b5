#include "formats/codecs/float_codec.h"

#include <bit>
#include <cstring>
#include <stdexcept>
#include <string>

#include "formats/codecs/mxfp4.h"
#include "formats/codecs/q8_0.h"
#include "formats/core/float16.h"
#include "formats/core/mapped_file.h"

namespace gptoss {

bool is_decodable(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F64 || t == DType::Q8_0 ||
         t == DType::MXFP4;
}

bool is_encodable(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::Q8_0; }

void decode_to_f32(DType type, const uint8_t* in, size_t n, float* out) {
  switch (type) {
    case DType::F32:
      std::memcpy(out, in, n * 4);
      return;
    case DType::F16:
      for (size_t i = 0; i < n; ++i) out[i] = f16_to_f32(load_u16(in + 2 * i));
      return;
    case DType::BF16:
      for (size_t i = 0; i < n; ++i) out[i] = bf16_to_f32(load_u16(in + 2 * i));
      return;
    case DType::F64:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(std::bit_cast<double>(load_u64(in + 8 * i)));
      return;
    case DType::Q8_0:
      q8_0::dequantize(in, n / 32, out);
      return;
    case DType::MXFP4:
      mxfp4::dequantize_ggml(in, n / 32, out);
      return;
    default:
      throw std::invalid_argument("cannot decode dtype " + std::string(dtype_name(type)) + " to f32");
  }
}

void encode_from_f32(DType type, const float* in, size_t n, uint8_t* out) {
  switch (type) {
    case DType::F32:
      std::memcpy(out, in, n * 4);
      return;
    case DType::F16:
      for (size_t i = 0; i < n; ++i) store_u16(out + 2 * i, f32_to_f16(in[i]));
      return;
    case DType::BF16:
      for (size_t i = 0; i < n; ++i) store_u16(out + 2 * i, f32_to_bf16(in[i]));
      return;
    case DType::Q8_0:
      q8_0::quantize(in, n / 32, out);
      return;
    default:
      throw std::invalid_argument("cannot encode f32 as dtype " + std::string(dtype_name(type)));
  }
}

uint64_t scale_bf16_in_place(uint8_t* bf16, size_t n, float scale) {
  const float inverse = 1.0f / scale;
  uint64_t inexact = 0;
  for (size_t i = 0; i < n; ++i) {
    const float x = bf16_to_f32(load_u16(bf16 + 2 * i));
    const uint16_t result = f32_to_bf16(x * scale);
    inexact += x == x && bf16_to_f32(result) * inverse != x;  // NaN stays NaN: not counted
    store_u16(bf16 + 2 * i, result);
  }
  return inexact;
}

}  // namespace gptoss

#include "formats/codecs/float_codec.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "formats/codecs/lanes.h"
#include "formats/core/float16.h"
#include "formats/core/mapped_file.h"

namespace gptoss {

bool is_decodable(DType t) { return dtype_info(t).decode != nullptr; }

bool is_encodable(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16 || dtype_info(t).encode != nullptr;
}

void decode_to_f32(DType type, const uint8_t* in, size_t n, float* out) {
  const DTypeInfo& info = dtype_info(type);
  if (!info.decode) throw std::invalid_argument("cannot decode dtype " + std::string(info.name) + " to f32");
  if (n % info.block_elements != 0)
    throw std::invalid_argument(std::to_string(n) + " elements are not a whole number of " + std::string(info.name) +
                                " blocks of " + std::to_string(info.block_elements));
  info.decode(in, n / info.block_elements, out);
}

// Four elements at a time (lanes.h), then the scalar code for the last few.
void decode_f32_values(const uint8_t* in, size_t n, float* out) { std::memcpy(out, in, n * 4); }

void decode_f16_values(const uint8_t* in, size_t n, float* out) {
  using namespace lanes;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) store(out + i, lanes::f16_to_f32(__builtin_convertvector(load<u16x4>(in + 2 * i), u32x4)));
  for (; i < n; ++i) out[i] = f16_to_f32(load_u16(in + 2 * i));
}

void decode_bf16_values(const uint8_t* in, size_t n, float* out) {
  using namespace lanes;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) store(out + i, lanes::bf16_to_f32(__builtin_convertvector(load<u16x4>(in + 2 * i), u32x4)));
  for (; i < n; ++i) out[i] = bf16_to_f32(load_u16(in + 2 * i));
}

void decode_f64_values(const uint8_t* in, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(std::bit_cast<double>(load_u64(in + 8 * i)));
}

void encode_from_f32(DType type, const float* in, size_t n, uint8_t* out) {
  using namespace lanes;
  size_t i = 0;
  switch (type) {
    case DType::F32:
      std::memcpy(out, in, n * 4);
      return;
    case DType::F16:
      for (; i + 4 <= n; i += 4) store(out + 2 * i, __builtin_convertvector(lanes::f32_to_f16(load<f32x4>(in + i)), u16x4));
      for (; i < n; ++i) store_u16(out + 2 * i, f32_to_f16(in[i]));
      return;
    case DType::BF16:
      for (; i + 4 <= n; i += 4) store(out + 2 * i, __builtin_convertvector(lanes::f32_to_bf16(load<f32x4>(in + i)), u16x4));
      for (; i < n; ++i) store_u16(out + 2 * i, f32_to_bf16(in[i]));
      return;
    default: {
      const DTypeInfo& info = dtype_info(type);
      if (!info.encode) throw std::invalid_argument("cannot encode f32 as dtype " + std::string(info.name));
      if (n % info.block_elements != 0)
        throw std::invalid_argument(std::to_string(n) + " elements are not a whole number of " + std::string(info.name) +
                                    " blocks of " + std::to_string(info.block_elements));
      info.encode(in, n / info.block_elements, out);
      return;
    }
  }
}

void measure_differences(const float* values, const float* decoded, size_t n, ValueDifferences& d) {
  using namespace lanes;
  // In float, four lanes at a time: whether a value changed (a float subtraction gives 0 only for
  // equal operands) and the largest |value| are exact there; the difference is rounded, but
  // rounding keeps the order, so the largest exact difference is among those whose rounded one
  // is the largest, and only they are computed again in double.
  i32x4 changed{};
  f32x4 max_value{}, max_rounded{};
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const f32x4 v = load<f32x4>(values + i), difference = abs(load<f32x4>(decoded + i) - v);
    changed -= ~(difference <= 0.0f);  // a NaN difference (inf - inf too) counts as changed
    max_rounded = select(difference > max_rounded, difference, max_rounded);
    const f32x4 a = abs(v);
    max_value = select(a > max_value, a, max_value);
  }
  for (int l = 0; l < 4; ++l) d.changed += static_cast<uint64_t>(changed[l]);
  d.max_abs_value = std::max(d.max_abs_value, static_cast<double>(max_lane(max_value)));
  // A difference above the largest so far rounds to at least that one rounded to float.
  const float largest = max_lane(max_rounded);
  if (largest > 0 && largest >= static_cast<float>(d.max_abs_error))
    for (size_t k = 0; k < i; k += 4) {
      const f32x4 v = load<f32x4>(values + k), b = load<f32x4>(decoded + k);
      const i64x2 hit = std::bit_cast<i64x2>(abs(b - v) == largest);
      if ((hit[0] | hit[1]) == 0) continue;
      for (int l = 0; l < 4; ++l)
        d.max_abs_error = std::max(d.max_abs_error, std::fabs(static_cast<double>(b[l]) - v[l]));
    }
  for (; i < n; ++i) {
    const double e = std::fabs(static_cast<double>(decoded[i]) - values[i]);
    d.changed += !(e <= 0);
    d.max_abs_error = e > d.max_abs_error ? e : d.max_abs_error;
    d.max_abs_value = std::max(d.max_abs_value, static_cast<double>(std::fabs(values[i])));
  }
}

uint64_t scale_bf16_in_place(uint8_t* bf16, size_t n, float scale) {
  using namespace lanes;
  const float inverse = 1.0f / scale;
  uint64_t inexact = 0;
  size_t i = 0;
  i32x4 inexact4{};
  for (; i + 4 <= n; i += 4) {
    const f32x4 x = lanes::bf16_to_f32(__builtin_convertvector(load<u16x4>(bf16 + 2 * i), u32x4));
    const u32x4 result = lanes::f32_to_bf16(x * scale);
    inexact4 -= (x == x) & (lanes::bf16_to_f32(result) * inverse != x);
    store(bf16 + 2 * i, __builtin_convertvector(result, u16x4));
  }
  for (int l = 0; l < 4; ++l) inexact += static_cast<uint64_t>(inexact4[l]);
  for (; i < n; ++i) {
    const float x = bf16_to_f32(load_u16(bf16 + 2 * i));
    const uint16_t result = f32_to_bf16(x * scale);
    inexact += x == x && bf16_to_f32(result) * inverse != x;  // NaN stays NaN: not counted
    store_u16(bf16 + 2 * i, result);
  }
  return inexact;
}

}  // namespace gptoss

#pragma once
// Short vectors through the vector extensions of GCC and Clang: SSE2 on any x86-64, NEON on arm64,
// no target flags, so the binaries run on any machine of the architecture. The codecs' inner
// loops use them where the auto-vectorizer gives up (max reductions, rounding, selects between
// encodings); every lane computes exactly what the scalar code in float16.h computes, and the
// tests compare the two over every 16-bit input and millions of 32-bit ones.
#include <bit>
#include <cstdint>
#include <cstring>

namespace gptoss::lanes {

static_assert(std::endian::native == std::endian::little, "the codecs' vector loads assume a little-endian host");

using f32x4 = float __attribute__((vector_size(16)));
using i32x4 = int32_t __attribute__((vector_size(16)));
using u32x4 = uint32_t __attribute__((vector_size(16)));
using u16x4 = uint16_t __attribute__((vector_size(8)));
using i8x4 = int8_t __attribute__((vector_size(4)));
using i8x16 = int8_t __attribute__((vector_size(16)));
using u8x16 = uint8_t __attribute__((vector_size(16)));
using i16x8 = int16_t __attribute__((vector_size(16)));
using f32x2 = float __attribute__((vector_size(8)));
using f64x2 = double __attribute__((vector_size(16)));
using i64x2 = int64_t __attribute__((vector_size(16)));

template <class V>
inline V load(const void* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class V>
inline void store(void* p, V v) {
  std::memcpy(p, &v, sizeof v);
}
template <class V, class S>
inline V splat(S s) {
  return V{} + s;
}
// The lanes of `a` where `mask` (a comparison's result: all ones or zero) is set, else of `b`.
template <class V, class M>
inline V select(M mask, V a, V b) {
  return std::bit_cast<V>((std::bit_cast<M>(a) & mask) | (std::bit_cast<M>(b) & ~mask));
}
// The low byte of each of the sixteen 32-bit lanes of a, b, c, d, in order.
inline i8x16 low_bytes(i32x4 a, i32x4 b, i32x4 c, i32x4 d) {
  const i16x8 ab = __builtin_shufflevector(std::bit_cast<i16x8>(a), std::bit_cast<i16x8>(b), 0, 2, 4, 6, 8, 10, 12, 14);
  const i16x8 cd = __builtin_shufflevector(std::bit_cast<i16x8>(c), std::bit_cast<i16x8>(d), 0, 2, 4, 6, 8, 10, 12, 14);
  return __builtin_shufflevector(std::bit_cast<i8x16>(ab), std::bit_cast<i8x16>(cd), 0, 2, 4, 6, 8, 10, 12, 14, 16, 18,
                                 20, 22, 24, 26, 28, 30);
}
// The largest lane of v, for lanes that are not NaN.
inline float max_lane(f32x4 v) {
  f32x4 m = select(v > __builtin_shufflevector(v, v, 2, 3, 0, 1), v, __builtin_shufflevector(v, v, 2, 3, 0, 1));
  m = select(m > __builtin_shufflevector(m, m, 1, 0, 3, 2), m, __builtin_shufflevector(m, m, 1, 0, 3, 2));
  return m[0];
}
inline f32x4 abs(f32x4 v) { return std::bit_cast<f32x4>(std::bit_cast<u32x4>(v) & 0x7fffffffu); }
inline f64x2 abs(f64x2 v) { return std::bit_cast<f64x2>(std::bit_cast<i64x2>(v) & INT64_MAX); }

// Four f32 -> BF16 exactly as f32_to_bf16: round to nearest even, NaN stays NaN and quiet.
inline u32x4 f32_to_bf16(f32x4 f) {
  const u32x4 bits = std::bit_cast<u32x4>(f);
  const i32x4 nan = std::bit_cast<i32x4>(bits & 0x7fffffffu) > 0x7f800000;
  return select(nan, (bits >> 16) | 64u, (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}
inline f32x4 bf16_to_f32(u32x4 h) { return std::bit_cast<f32x4>(h << 16); }

// Four IEEE halves -> f32 exactly as f16_to_f32 (without its loop for subnormals: a subnormal is
// formed as a normal number 2^-14 too large and corrected by an exact subtraction).
inline f32x4 f16_to_f32(u32x4 h) {
  const u32x4 shifted_exp = splat<u32x4>(0x7c00u << 13);
  const u32x4 magnitude = (h & 0x7fffu) << 13;
  const u32x4 exp = magnitude & shifted_exp;
  const u32x4 normal = magnitude + ((127u - 15u) << 23);
  const u32x4 inf_nan = normal + ((128u - 16u) << 23);
  const u32x4 subnormal = std::bit_cast<u32x4>(std::bit_cast<f32x4>(normal + (1u << 23)) - std::bit_cast<f32x4>(splat<u32x4>(113u << 23)));
  const u32x4 bits = select(std::bit_cast<i32x4>(exp == shifted_exp), inf_nan,
                            select(std::bit_cast<i32x4>(exp == 0u), subnormal, normal));
  return std::bit_cast<f32x4>(bits | ((h & 0x8000u) << 16));
}

// Four f32 -> IEEE halves exactly as f32_to_f16 (round to nearest even; subnormal results come
// from an f32 addition that rounds at the half's subnormal step; NaN -> quiet NaN).
inline u32x4 f32_to_f16(f32x4 f) {
  const u32x4 bits = std::bit_cast<u32x4>(f);
  const u32x4 sign = bits & 0x80000000u;
  const u32x4 abs_bits = bits ^ sign;
  const i32x4 magnitude = std::bit_cast<i32x4>(abs_bits);  // below 2^31: signed compares are right
  const u32x4 inf_nan = select(magnitude > 0x7f800000, splat<u32x4>(0x7e00u), splat<u32x4>(0x7c00u));
  const f32x4 denorm_magic = splat<f32x4>(0.5f);  // ((127 - 15) + (23 - 10) + 1) << 23
  const u32x4 subnormal = std::bit_cast<u32x4>(std::bit_cast<f32x4>(abs_bits) + denorm_magic) - std::bit_cast<u32x4>(denorm_magic);
  const u32x4 normal = (abs_bits + (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu + ((abs_bits >> 13) & 1u)) >> 13;
  const u32x4 result = select(magnitude >= (143 << 23), inf_nan, select(magnitude < (113 << 23), subnormal, normal));
  return result | (sign >> 16);
}

}  // namespace gptoss::lanes

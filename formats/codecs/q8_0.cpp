#include "formats/codecs/q8_0.h"

#include <cmath>

#include "formats/codecs/lanes.h"
#include "formats/core/float16.h"
#include "formats/core/mapped_file.h"

namespace gptoss::q8_0 {

// Four lanes at a time (lanes.h); the lanes compute exactly what ggml's scalar reference does.
void quantize(const float* in, size_t n_blocks, uint8_t* out34) {
  using namespace lanes;
  for (size_t b = 0; b < n_blocks; ++b) {
    const float* x = in + 32 * b;
    uint8_t* block = out34 + 34 * b;
    f32x4 v[8];
    f32x4 amax4{};
    for (int k = 0; k < 8; ++k) {
      v[k] = load<f32x4>(x + 4 * k);
      const f32x4 a = abs(v[k]);
      amax4 = select(a > amax4, a, amax4);  // as fmaxf: a NaN never wins
    }
    const float amax = max_lane(amax4);  // never NaN, and max is exact in any order
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_u16(block, f32_to_f16(d));
    i32x4 q[8];
    for (int k = 0; k < 8; ++k) {
      f32x4 s = v[k] * id;
      // NaN (inf * 0) and values beyond int32 (inf, or from an id of a subnormal d) give 0, what
      // ggml's cast (undefined in C) gives on x86; beyond 127 the low byte wraps, as there.
      s = select(abs(s) < 0x1p31f, s, f32x4{});
      q[k] = __builtin_convertvector(s, i32x4);  // toward zero, exact
      const f32x4 fraction = s - __builtin_convertvector(q[k], f32x4);
      q[k] = q[k] - (fraction >= 0.5f) + (fraction <= -0.5f);  // masks are -1: roundf's halves away from zero
    }
    store(block + 2, low_bytes(q[0], q[1], q[2], q[3]));
    store(block + 18, low_bytes(q[4], q[5], q[6], q[7]));
  }
}

void dequantize(const uint8_t* in34, size_t n_blocks, float* out) {
  using namespace lanes;
  for (size_t b = 0; b < n_blocks; ++b) {
    const uint8_t* block = in34 + 34 * b;
    const float d = f16_to_f32(load_u16(block));
    for (int k = 0; k < 8; ++k) store(out + 32 * b + 4 * k, __builtin_convertvector(load<i8x4>(block + 2 + 4 * k), f32x4) * d);
  }
}

}  // namespace gptoss::q8_0

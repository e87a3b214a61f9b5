#include "runtime/rope.h"

#include <cmath>

namespace gptoss::runtime {
namespace {
template <class Real>
void rope_table_impl(uint64_t position, std::span<const float> inv_freq, float concentration, Real* cos_out,
                     Real* sin_out) {
  const auto pos = static_cast<float>(position);
  for (size_t i = 0; i < inv_freq.size(); ++i) {
    const Real angle = pos * inv_freq[i];  // f32 product, as transformers
    cos_out[i] = std::cos(angle) * concentration;
    sin_out[i] = std::sin(angle) * concentration;
  }
}
}  // namespace

void rope_table(uint64_t position, std::span<const float> inv_freq, float concentration, float* cos_out,
                float* sin_out) {
  rope_table_impl(position, inv_freq, concentration, cos_out, sin_out);
}
void rope_table(uint64_t position, std::span<const float> inv_freq, float concentration, double* cos_out,
                double* sin_out) {
  rope_table_impl(position, inv_freq, concentration, cos_out, sin_out);
}

std::vector<float> rope_pairs(uint64_t positions, std::span<const float> inv_freq, float concentration) {
  const size_t half = inv_freq.size();
  std::vector<float> pairs(positions * half * 2), cos_row(half), sin_row(half);
  for (uint64_t p = 0; p < positions; ++p) {
    rope_table(p, inv_freq, concentration, cos_row.data(), sin_row.data());
    for (size_t i = 0; i < half; ++i) {
      pairs[(p * half + i) * 2] = cos_row[i];
      pairs[(p * half + i) * 2 + 1] = sin_row[i];
    }
  }
  return pairs;
}

}  // namespace gptoss::runtime

#pragma once
// The rotary tables every engine uses: one definition, so the Vulkan engine's f32 table holds the
// CPU engine's f32 values bit for bit (the GPU's own cos/sin of a reduced angle are within a few
// 1e-7 of them, enough to turn a router's near tie the other way).
#include <cstdint>
#include <span>
#include <vector>

namespace gptoss::runtime {

// YaRN rotary tables for one position: cos and sin of pos · inv_freq[i], both multiplied by the
// YaRN concentration. The angle is rounded to f32 as transformers computes it (inv_freq @ position
// in f32); the f64 overload then takes cos and sin of that angle in double.
void rope_table(uint64_t position, std::span<const float> inv_freq, float concentration, float* cos_out,
                float* sin_out);
void rope_table(uint64_t position, std::span<const float> inv_freq, float concentration, double* cos_out,
                double* sin_out);

// Positions 0 .. positions - 1 of the f32 table as one array [positions, inv_freq.size(), 2] of
// (cos, sin) pairs: what the Vulkan engine uploads.
std::vector<float> rope_pairs(uint64_t positions, std::span<const float> inv_freq, float concentration);

}  // namespace gptoss::runtime

#pragma once
// The lattice grids of ggml's i-quants (data, iq_grids.cpp). A group of 8 elements (4 for the
// 3-bit grids) is stored as an index into one of these tables; the entry holds the group's
// magnitudes, element j in byte j. The signs, scales and (for IQ1) a shift are stored beside the
// index in the block.
#include <cstdint>

namespace gptoss::iq_grids {

extern const uint64_t kIq2xxs[256];  // IQ2_XXS: magnitudes 8, 25, 43
extern const uint64_t kIq2xs[512];   // IQ2_XS: the same magnitudes, 512 points
extern const uint64_t kIq2s[1024];   // IQ2_S: the same magnitudes, 1024 points
extern const uint32_t kIq3xxs[256];  // IQ3_XXS: 4 magnitudes of 4, 12, ..., 62 per entry
extern const uint32_t kIq3s[512];    // IQ3_S: 4 odd magnitudes 1..15 per entry
extern const uint64_t kIq1s[2048];   // IQ1_S and IQ1_M: 8 signed bytes -1, 0, +1 per entry

// The sign byte of a 7-bit sign index (IQ2_XXS, IQ2_XS, IQ3_XXS): the 8th sign is the parity of
// the other seven, so an even number of the group's 8 elements is negative (ggml's ksigns_iq2xs).
constexpr uint8_t signs_of_index(uint32_t index7) {
  const uint32_t i = index7 & 127;
  return static_cast<uint8_t>(i | ((__builtin_popcount(i) & 1) << 7));
}

}  // namespace gptoss::iq_grids

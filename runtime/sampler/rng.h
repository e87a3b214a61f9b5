#pragma once
// A small deterministic random generator for sampling: the same seed gives the same token
// sequence on every machine and compiler (std::mt19937 would too, but std::*_distribution would
// not). splitmix64 seeds xoshiro256**.
#include <cstdint>

namespace gptoss::sampling {

class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t next_u64();
  // Uniform in [0, 1) with 53 random bits.
  double next_double() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_[4];
};

}  // namespace gptoss::sampling

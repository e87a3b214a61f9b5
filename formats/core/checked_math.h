#pragma once
// Size arithmetic on numbers that came from a file: every product and sum is checked, because
// a wrapped size is how heap overflows in model parsers start.
#include <cstdint>
#include <optional>
#include <span>

namespace gptoss {

inline std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<uint64_t> checked_add(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// Product of the dimensions (1 for a scalar); nullopt when it does not fit in 64 bits.
inline std::optional<uint64_t> checked_product(std::span<const uint64_t> dims) {
  uint64_t n = 1;
  for (uint64_t d : dims) {
    auto next = checked_mul(n, d);
    if (!next) return std::nullopt;
    n = *next;
  }
  return n;
}

// Round up to a multiple of a power-of-two alignment; nullopt on overflow.
inline std::optional<uint64_t> checked_align_up(uint64_t value, uint64_t alignment) {
  auto bumped = checked_add(value, alignment - 1);
  if (!bumped) return std::nullopt;
  return *bumped & ~(alignment - 1);
}

constexpr uint64_t align_up(uint64_t value, uint64_t alignment) { return (value + alignment - 1) / alignment * alignment; }

}  // namespace gptoss

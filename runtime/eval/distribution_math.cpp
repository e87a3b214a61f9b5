#include "runtime/eval/distribution_math.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <stdexcept>

// GCC builds each hot pass twice and picks the AVX2 one at load time where the CPU has it; the
// binaries stay runnable on any x86-64 (they are carried to other machines).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define GPTOSS_HOT __attribute__((target_clones("avx2", "default")))
#else
#define GPTOSS_HOT
#endif

// The 8-lane vector helpers below stay inside this file (anonymous namespace), so the ABI note
// GCC gives for passing 32-byte vectors without AVX concerns no caller.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace gptoss::eval {
namespace {

using f8 = float __attribute__((vector_size(32)));
using i8 = int32_t __attribute__((vector_size(32)));
using d4 = double __attribute__((vector_size(32)));
using f4 = float __attribute__((vector_size(16)));
constexpr size_t kLanes = 8;

inline f8 load8(const float* p) {
  f8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline f8 splat(float x) { return f8{} + x; }
inline f8 select(i8 mask, f8 a, f8 b) {
  // A cast between vector types of one size keeps the bits (GCC and clang vector extensions).
  return (f8)((mask & (i8)a) | (~mask & (i8)b));
}

// Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2, then exp(r) by its Taylor series to r^7
// (truncation error < 6e-9 relative) and 2^n through the exponent bits. The same steps as the
// scalar exp_nonpositive below, lane by lane.
constexpr float kLog2e = 1.44269504088896341f, kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
constexpr float kFloor = -87.0f;
constexpr int32_t kRoundBits = 0x4B400000;

constexpr float kCeiling = 80.0f;  // exp(80) ~ 5.5e34: finite in f32

// exp's argument reduction and polynomial, one text for the vector and the scalar path (so the
// two agree to the bit): x = n ln 2 + r with n held in t's low bits (kRound), e^r by its degree-7
// Taylor polynomial; the caller scales by 2^n.
template <class F>
inline F exp_of_reduced(F x, F& t) {
  t = x * kLog2e + kRound;
  const F n = t - kRound;
  const F r = (x - n * kLn2Hi) - n * kLn2Lo;
  F p = r * (1.0f / 5040) + (1.0f / 720);
  p = p * r + (1.0f / 120);
  p = p * r + (1.0f / 24);
  p = p * r + (1.0f / 6);
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  return p;
}

// exp(x) for x in [-87, 80] (0 below, exp(80) above).
inline f8 exp8(f8 x) {
  const i8 under = x < kFloor;
  f8 c = select(under, splat(kFloor), x);
  c = select(c > kCeiling, splat(kCeiling), c);
  f8 t;
  const f8 p = exp_of_reduced(c, t);
  const i8 exponent = (((i8)t - kRoundBits) + 127) << 23;
  const f8 v = p * (f8)exponent;
  return select(under, f8{}, v);
}

inline float exp1(float x) {
  if (x < kFloor) return 0.0f;
  float t;
  const float p = exp_of_reduced(x, t);
  // Unsigned: a NaN input must not make the shift undefined (its result is NaN-polluted anyway).
  const uint32_t exponent = ((std::bit_cast<uint32_t>(t) - static_cast<uint32_t>(kRoundBits)) + 127u) << 23;
  return p * std::bit_cast<float>(exponent);
}

// g(t) = exp(t) - 1 - t, the part of expm1 beyond first order: for |t| <= 1/2 the Taylor series
// t^2 (1/2 + t/6 + ... + t^6/8!) (truncation < 1e-8 relative), exp(t) - 1 - t beyond. The first
// order is summed apart in f64, so the rounding of f32 scales g, not t.
constexpr float kSmall = 0.5f;
inline f8 expm1_beyond_linear8(f8 t) {
  f8 p = t * (1.0f / 40320) + (1.0f / 5040);
  p = p * t + (1.0f / 720);
  p = p * t + (1.0f / 120);
  p = p * t + (1.0f / 24);
  p = p * t + (1.0f / 6);
  p = p * t + 0.5f;
  const f8 series = p * t * t;
  const f8 magnitude = select(t < 0.0f, -t, t);
  return select(magnitude <= kSmall, series, (exp8(t) - 1.0f) - t);
}

inline float expm1_beyond_linear1(float t) {
  if (t < -kSmall || t > kSmall) return (exp1(std::min(t, kCeiling)) - 1.0f) - t;
  float p = t * (1.0f / 40320) + (1.0f / 5040);
  p = p * t + (1.0f / 720);
  p = p * t + (1.0f / 120);
  p = p * t + (1.0f / 24);
  p = p * t + (1.0f / 6);
  p = p * t + 0.5f;
  return p * t * t;
}

inline void add_to(d4& lo, d4& hi, f8 v) {
  lo += __builtin_convertvector(__builtin_shufflevector(v, v, 0, 1, 2, 3), d4);
  hi += __builtin_convertvector(__builtin_shufflevector(v, v, 4, 5, 6, 7), d4);
}
inline double total(d4 lo, d4 hi) {
  const d4 s = lo + hi;
  return (s[0] + s[1]) + (s[2] + s[3]);
}

GPTOSS_HOT float row_max(const float* v, size_t n) {
  if (n == 0) throw std::invalid_argument("an empty row of logits");
  size_t i = 0;
  float best = v[0];
  if (n >= kLanes) {
    f8 m = load8(v);
    for (i = kLanes; i + kLanes <= n; i += kLanes) {
      const f8 x = load8(v + i);
      m = select(x > m, x, m);
    }
    for (size_t l = 0; l < kLanes; ++l) best = std::max(best, m[l]);
  }
  for (; i < n; ++i) best = std::max(best, v[i]);
  return best;
}

uint32_t first_index_of(const float* v, size_t n, float value) {
  for (size_t i = 0; i < n; ++i)
    if (v[i] == value) return static_cast<uint32_t>(i);
  // Only a NaN can leave the maximum unmatched: answer 0 and let the NaN surface in the sums.
  return 0;
}

// sum_i exp(v_i - shift).
GPTOSS_HOT double sum_exp(const float* v, size_t n, float shift) {
  d4 lo{}, hi{};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) add_to(lo, hi, exp8(load8(v + i) - shift));
  double sum = total(lo, hi);
  for (; i < n; ++i) sum += exp1(v[i] - shift);
  return sum;
}

// sum_i e_i and sum_i e_i d_i with e_i = exp(x_i - shift), d_i = y_i - x_i (in f64).
GPTOSS_HOT void weighted_difference(const float* x, const float* y, size_t n, float shift, double& sum_e,
                                    double& sum_e_d) {
  d4 s_lo{}, s_hi{}, a_lo{}, a_hi{};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const f8 xv = load8(x + i), yv = load8(y + i);
    const f8 e = exp8(xv - shift);
    add_to(s_lo, s_hi, e);
    const d4 e_lo = __builtin_convertvector(__builtin_shufflevector(e, e, 0, 1, 2, 3), d4);
    const d4 e_hi = __builtin_convertvector(__builtin_shufflevector(e, e, 4, 5, 6, 7), d4);
    const d4 d_lo = __builtin_convertvector(__builtin_shufflevector(yv, yv, 0, 1, 2, 3), d4) -
                    __builtin_convertvector(__builtin_shufflevector(xv, xv, 0, 1, 2, 3), d4);
    const d4 d_hi = __builtin_convertvector(__builtin_shufflevector(yv, yv, 4, 5, 6, 7), d4) -
                    __builtin_convertvector(__builtin_shufflevector(xv, xv, 4, 5, 6, 7), d4);
    a_lo += e_lo * d_lo;
    a_hi += e_hi * d_hi;
  }
  sum_e = total(s_lo, s_hi);
  sum_e_d = total(a_lo, a_hi);
  for (; i < n; ++i) {
    const double e = exp1(x[i] - shift);
    sum_e += e;
    sum_e_d += e * (static_cast<double>(y[i]) - x[i]);
  }
}

// sum_i e_i expm1(t_i), t_i = d_i - mean, e_i = exp(x_i - shift), d_i = y_i - x_i: the first
// order sum_i e_i t_i (0 up to rounding when mean = E_P[d]) in f64 from t_i formed in f64, the
// rest sum_i e_i g(t_i) in f32 products, so each part is as precise as its own size allows.
GPTOSS_HOT double weighted_expm1(const float* x, const float* y, size_t n, float shift, double mean) {
  d4 first_lo{}, first_hi{}, rest_lo{}, rest_hi{};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const f8 xv = load8(x + i), yv = load8(y + i);
    const f8 e = exp8(xv - shift);
    const d4 t_lo = __builtin_convertvector(__builtin_shufflevector(yv, yv, 0, 1, 2, 3), d4) -
                    __builtin_convertvector(__builtin_shufflevector(xv, xv, 0, 1, 2, 3), d4) - mean;
    const d4 t_hi = __builtin_convertvector(__builtin_shufflevector(yv, yv, 4, 5, 6, 7), d4) -
                    __builtin_convertvector(__builtin_shufflevector(xv, xv, 4, 5, 6, 7), d4) - mean;
    first_lo += __builtin_convertvector(__builtin_shufflevector(e, e, 0, 1, 2, 3), d4) * t_lo;
    first_hi += __builtin_convertvector(__builtin_shufflevector(e, e, 4, 5, 6, 7), d4) * t_hi;
    const f8 t = __builtin_shufflevector(__builtin_convertvector(t_lo, f4), __builtin_convertvector(t_hi, f4), 0, 1, 2, 3,
                                         4, 5, 6, 7);
    add_to(rest_lo, rest_hi, e * expm1_beyond_linear8(t));
  }
  double first = total(first_lo, first_hi), rest = total(rest_lo, rest_hi);
  for (; i < n; ++i) {
    const double t = static_cast<double>(y[i]) - x[i] - mean;
    const double e = exp1(x[i] - shift);
    first += e * t;
    rest += e * expm1_beyond_linear1(static_cast<float>(t));
  }
  return first + rest;
}

}  // namespace

float exp_nonpositive(float x) { return exp1(x); }

RowSummary summarize_row(std::span<const float> logits) {
  RowSummary s;
  s.max = row_max(logits.data(), logits.size());
  s.argmax = first_index_of(logits.data(), logits.size(), s.max);
  s.log_norm = s.max + std::log(sum_exp(logits.data(), logits.size(), s.max));
  return s;
}

PositionComparison compare_position(std::span<const float> reference, std::span<const float> candidate) {
  if (reference.size() != candidate.size())
    throw std::invalid_argument("compare_position: rows of different lengths");
  const size_t n = reference.size();
  const float* x = reference.data();
  const float* y = candidate.data();
  const float mx = row_max(x, n), my = row_max(y, n);
  PositionComparison c;
  c.ref_top = first_index_of(x, n, mx);
  c.cand_top = first_index_of(y, n, my);
  // With d_i = y_i - x_i: log(Zy / Zx) = log E_P[exp(d)], so KL = E_P[-d] + log E_P[exp(d)]
  // = log E_P[exp(d - E_P[d])] = log1p(E_P[expm1(d - E_P[d])]). Written so, the rounding of the
  // f32 exp in the weights P_i scales the (small) result instead of adding to it, and identical
  // rows give exactly 0.
  double sum_e = 0, sum_e_d = 0;
  weighted_difference(x, y, n, mx, sum_e, sum_e_d);
  const double mean_d = sum_e_d / sum_e;
  const double kl = std::log1p(weighted_expm1(x, y, n, mx, mean_d) / sum_e);
  c.ref_log_norm = mx + std::log(sum_e);
  c.cand_log_norm = my + std::log(sum_exp(y, n, my));
  c.kl = kl > 0 ? kl : (std::isnan(kl) ? kl : 0.0);
  c.p_ref_top = std::exp(static_cast<double>(x[c.ref_top]) - c.ref_log_norm);
  c.q_ref_top = std::exp(static_cast<double>(y[c.ref_top]) - c.cand_log_norm);
  return c;
}

}  // namespace gptoss::eval

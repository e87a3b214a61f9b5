// The CPU engine's products sum in one documented order (fixed_order_products.h), whatever the
// rows around them, the threads or the machine's vector width: each value here is compared bit for
// bit with a scalar evaluation of that order.
#include "runtime/cpu/fixed_order_products.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace gptoss::test {
namespace {

using cpu::RowProducts;

// Deterministic values of mixed signs and magnitudes (a fixed linear congruential sequence), so
// that sums in another order round differently.
template <class Real>
std::vector<Real> values(size_t n, uint32_t seed) {
  std::vector<Real> v(n);
  uint32_t s = seed;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    const double unit = static_cast<double>(s >> 8) / double(1u << 24) - 0.5;
    const double scale = (s & 3u) == 0 ? 1000.0 : (s & 3u) == 1 ? 1e-3 : 1.0;
    x = static_cast<Real>(unit * scale);
  }
  return v;
}

// The order, one scalar step at a time: 4 lanes of doubles, element i's product in double to lane
// i mod 4, then lane l with lane l + 2 and lane 0 with lane 1; times the scale where it is not 1,
// plus the bias, in double; rounded to Real once.
template <class Real>
Real reference_dot(const Real* x, const Real* w, size_t depth, Real scale, const Real* bias) {
  constexpr size_t L = 4;
  double lanes[L] = {};
  for (size_t i = 0; i < depth; ++i) {
    const double product = static_cast<double>(x[i]) * static_cast<double>(w[i]);
    lanes[i % L] = lanes[i % L] + product;
  }
  for (size_t half = L / 2; half >= 1; half /= 2)
    for (size_t l = 0; l < half; ++l) lanes[l] = lanes[l] + lanes[l + half];
  double value = lanes[0];
  if (scale != Real(1)) value = value * static_cast<double>(scale);
  if (bias) value = value + static_cast<double>(*bias);
  return static_cast<Real>(value);
}

template <class Real>
bool same_bits(Real a, Real b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

template <class Real>
void expect_the_documented_order(size_t rows, size_t outputs, size_t depth, bool bias, Real scale, unsigned threads,
                                 bool baseline) {
  SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(outputs) + "x" + std::to_string(depth) +
               (baseline ? " baseline" : "") + " threads " + std::to_string(threads));
  const size_t x_stride = depth + 3, w_stride = depth + 5, y_stride = outputs + 2;  // strides wider than rows
  const auto x = values<Real>(rows * x_stride, 1), w = values<Real>(outputs * w_stride, 2), b = values<Real>(outputs, 3);
  std::vector<Real> y(rows * y_stride, Real(-7));
  RowProducts shape;
  shape.rows = rows, shape.outputs = outputs, shape.depth = depth;
  shape.x_stride = x_stride, shape.w_stride = w_stride, shape.y_stride = y_stride;
  shape.baseline_code = baseline;
  cpu::row_products(shape, x.data(), w.data(), bias ? b.data() : nullptr, scale, y.data(), threads);
  size_t wrong = 0;
  for (size_t r = 0; r < rows; ++r) {
    for (size_t o = 0; o < outputs; ++o) {
      const Real expected =
          reference_dot(x.data() + r * x_stride, w.data() + o * w_stride, depth, scale, bias ? &b[o] : nullptr);
      if (!same_bits(y[r * y_stride + o], expected)) ++wrong;
    }
    for (size_t o = outputs; o < y_stride; ++o) EXPECT_EQ(y[r * y_stride + o], Real(-7)) << "wrote past its outputs";
  }
  EXPECT_EQ(wrong, 0u) << "values that are not the documented order's bits";
}

TEST(FixedOrderProducts, EveryShapeGivesTheDocumentedOrdersBits) {
  // Rows 1..9 cover every row tile (4, 3, 2, 1) and their mixes; outputs past the 8-wide tile and
  // odd; depths below, at and past a lane multiple.
  for (size_t rows : {1u, 2u, 3u, 4u, 5u, 7u, 9u})
    for (size_t outputs : {1u, 3u, 8u, 13u})
      for (size_t depth : {1u, 7u, 8u, 33u, 64u}) {
        expect_the_documented_order<float>(rows, outputs, depth, true, 1.0f, 1, false);
        expect_the_documented_order<double>(rows, outputs, depth, false, 0.125, 1, false);
      }
}

TEST(FixedOrderProducts, BaselineCodeAndThreadsGiveTheSameBits) {
  // Large enough to be split into tasks over threads (more than one output block and row block).
  for (bool baseline : {false, true})
    for (unsigned threads : {1u, 3u}) {
      expect_the_documented_order<float>(70, 300, 2880, true, 1.0f, threads, baseline);
      expect_the_documented_order<double>(70, 100, 2880, true, 1.0, threads, baseline);
    }
}

TEST(FixedOrderProducts, ARowsValuesDoNotDependOnTheOtherRows) {
  const size_t depth = 2880, outputs = 200;
  const auto x = values<float>(45 * depth, 4), w = values<float>(outputs * depth, 5);
  auto products = [&](size_t rows, size_t first) {
    std::vector<float> y(rows * outputs);
    RowProducts shape;
    shape.rows = rows, shape.outputs = outputs, shape.depth = depth;
    shape.x_stride = depth, shape.w_stride = depth, shape.y_stride = outputs;
    cpu::row_products(shape, x.data() + first * depth, w.data(), nullptr, 1.0f, y.data());
    return y;
  };
  const auto all = products(45, 0);
  for (size_t rows : {1u, 2u, 3u, 40u, 44u}) {
    const auto some = products(rows, 0);
    EXPECT_EQ(std::memcmp(some.data(), all.data(), some.size() * sizeof(float)), 0) << rows << " rows";
  }
  const auto one = products(1, 41);  // a row alone equals that row among all
  EXPECT_EQ(std::memcmp(one.data(), all.data() + 41 * outputs, outputs * sizeof(float)), 0);
}

TEST(FixedOrderProducts, WeightedRowsSumEachValueOverTheRowsInOrder) {
  for (size_t dim : {1u, 5u, 16u, 64u, 70u}) {
    const size_t count = 37, stride = dim + 4;
    const auto p = values<float>(count, 6), v = values<float>(count * stride, 7);
    std::vector<float> out(dim);
    cpu::weighted_rows(p.data(), count, v.data(), stride, dim, out.data());
    for (size_t d = 0; d < dim; ++d) {
      double sum = 0;
      for (size_t j = 0; j < count; ++j) {
        const double product = static_cast<double>(p[j]) * static_cast<double>(v[j * stride + d]);
        sum = sum + product;
      }
      EXPECT_TRUE(same_bits(out[d], static_cast<float>(sum))) << "dim " << dim << " value " << d;
    }
  }
}

}  // namespace
}  // namespace gptoss::test

#include "runtime/cpu/fixed_order_products.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "formats/core/parallel_for.h"

namespace gptoss::cpu {
namespace {

// Every sum is kept in double, whatever the inputs: f32 x f32 products are exact in double, and
// a sum of thousands of them rounds far less than in f32, so the f32 engine's products carry f32's
// rounding of their inputs and outputs only (a router's near tie then goes the way f64's does).
typedef double Sum [[gnu::vector_size(32)]];
typedef float Quad [[gnu::vector_size(16)]];
constexpr size_t kLanes = 4;

// kLanes values from p, widened to double.
[[gnu::always_inline]] inline Sum load(const double* p) {
  Sum v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
[[gnu::always_inline]] inline Sum load(const float* p) {
  Quad q;
  std::memcpy(&q, p, sizeof q);
  return __builtin_convertvector(q, Sum);
}
[[gnu::always_inline]] inline void store(double* p, Sum v) { std::memcpy(p, &v, sizeof v); }
// The last `n` < kLanes values, the other lanes zero (a zero term leaves a lane's sum as it is).
template <class Real>
[[gnu::always_inline]] inline Sum load_tail(const Real* p, size_t n) {
  Real values[kLanes] = {};
  std::memcpy(values, p, n * sizeof(Real));
  return load(values);
}
// Lanes summed pairwise: lane l with lane l + half, halving until one is left.
[[gnu::always_inline]] inline double reduce(Sum v) {
  double lanes[kLanes];
  std::memcpy(lanes, &v, sizeof v);
  for (size_t half = kLanes / 2; half >= 1; half /= 2)
    for (size_t l = 0; l < half; ++l) lanes[l] = lanes[l] + lanes[l + half];
  return lanes[0];
}

template <class Real>
struct Args {
  RowProducts shape;
  const Real *x, *w, *bias;
  Real scale;
  Real* y;
  size_t row_block, output_block, output_blocks;
};

// Depth is taken in slices of kSliceValues per row, so the rows a tile reads stay in the L1 cache
// while it passes over a block of weights; a tile's lane sums wait in `sums` between slices
// (stored and reloaded exactly, so the order is unchanged).
constexpr size_t kSliceValues = 256;
// A task: up to kRowBlock rows against kOutputBlock outputs (that block of weights stays in the L2
// cache while every row of the task passes over it).
constexpr size_t kRowBlock = 128;
constexpr size_t kOutputBlock = 32;

// One slice of a task's operands as doubles: row r's values at x + r * x_stride, output o's weights
// at w + o * w_stride, n values each (relative to the task's first row and output). f64 inputs are
// used where they lie; f32 inputs are widened into scratch once per slice, not once per tile.
struct Panel {
  const double* x;
  size_t x_stride;
  const double* w;
  size_t w_stride;
  size_t n;
  bool first, last;  // the depth's first and last slice
};

// R rows x O outputs (r0, o0: relative to the task) over one slice: acc[r][o] += x_r · w_o, one
// vector at a time, the sums taken from and left in `sums` (R x O vectors), or after the last
// slice reduced, scaled, biased and rounded into y (absolute row row0 + r0, output out0 + o0).
template <class Real, size_t R, size_t O>
[[gnu::always_inline]] inline void tile(const Args<Real>& a, const Panel& p, size_t row0, size_t out0, size_t r0,
                                        size_t o0, double* sums) {
  constexpr size_t L = kLanes;
  Sum acc[R][O];
  _Pragma("GCC unroll 8") for (size_t r = 0; r < R; ++r)
    _Pragma("GCC unroll 8") for (size_t o = 0; o < O; ++o) acc[r][o] = p.first ? Sum{} : load(sums + (r * O + o) * L);
  const double* x = p.x + r0 * p.x_stride;
  const double* w = p.w + o0 * p.w_stride;
  size_t i = 0;
  for (; i + L <= p.n; i += L) {
    Sum wv[O];
    _Pragma("GCC unroll 8") for (size_t o = 0; o < O; ++o) wv[o] = load(w + o * p.w_stride + i);
    _Pragma("GCC unroll 8") for (size_t r = 0; r < R; ++r) {
      const Sum xv = load(x + r * p.x_stride + i);
      _Pragma("GCC unroll 8") for (size_t o = 0; o < O; ++o) acc[r][o] += xv * wv[o];
    }
  }
  if (i < p.n) {  // the depth's last values (only in its last slice)
    const size_t n = p.n - i;
    Sum wv[O];
    _Pragma("GCC unroll 8") for (size_t o = 0; o < O; ++o) wv[o] = load_tail(w + o * p.w_stride + i, n);
    _Pragma("GCC unroll 8") for (size_t r = 0; r < R; ++r) {
      const Sum xv = load_tail(x + r * p.x_stride + i, n);
      _Pragma("GCC unroll 8") for (size_t o = 0; o < O; ++o) acc[r][o] += xv * wv[o];
    }
  }
  if (!p.last) {
    _Pragma("GCC unroll 8") for (size_t r = 0; r < R; ++r)
      _Pragma("GCC unroll 8") for (size_t o = 0; o < O; ++o) store(sums + (r * O + o) * L, acc[r][o]);
    return;
  }
  _Pragma("GCC unroll 8") for (size_t r = 0; r < R; ++r)
    _Pragma("GCC unroll 8") for (size_t o = 0; o < O; ++o) {
      const size_t row = row0 + r0 + r, out = out0 + o0 + o;
      double value = reduce(acc[r][o]);
      if (a.scale != Real(1)) value *= static_cast<double>(a.scale);
      if (a.bias) value += static_cast<double>(a.bias[out]);
      a.y[row * a.shape.y_stride + out] = static_cast<Real>(value);  // the one rounding to Real
    }
}

// R rows against the task's `width` outputs over one slice: O outputs at a time, then one at a
// time. `sums` holds R vectors per output.
template <class Real, size_t R, size_t O>
[[gnu::always_inline]] inline void rows_against(const Args<Real>& a, const Panel& p, size_t row0, size_t out0,
                                                size_t r0, size_t width, double* sums) {
  size_t o = 0;
  for (; o + O <= width; o += O) tile<Real, R, O>(a, p, row0, out0, r0, o, sums + o * R * kLanes);
  for (; o < width; ++o) tile<Real, R, 1>(a, p, row0, out0, r0, o, sums + o * R * kLanes);
}

// `count` rows of `n` values at `source` (rows `stride` apart) as doubles, rows n apart.
template <class Real>
[[gnu::always_inline]] inline void widen(const Real* source, size_t stride, size_t count, size_t n, double* target) {
  for (size_t r = 0; r < count; ++r)
    for (size_t i = 0; i < n; ++i) target[r * n + i] = static_cast<double>(source[r * stride + i]);
}

// One task: a block of rows against a block of outputs, slice by slice of the depth.
template <class Real>
[[gnu::always_inline]] inline void run_task(const Args<Real>& a, size_t task, double* sums, double* scratch) {
  const auto& s = a.shape;
  const size_t r_first = (task / a.output_blocks) * a.row_block, o_first = (task % a.output_blocks) * a.output_block;
  const size_t rows = std::min(s.rows, r_first + a.row_block) - r_first;
  const size_t width = std::min(s.outputs, o_first + a.output_block) - o_first;
  for (size_t i0 = 0; i0 < s.depth; i0 += kSliceValues) {
    const size_t n = std::min(s.depth - i0, kSliceValues);
    Panel p{nullptr, 0, nullptr, 0, n, i0 == 0, i0 + n == s.depth};
    if constexpr (std::is_same_v<Real, double>) {
      p.x = a.x + r_first * s.x_stride + i0, p.x_stride = s.x_stride;
      p.w = a.w + o_first * s.w_stride + i0, p.w_stride = s.w_stride;
    } else {
      widen(a.x + r_first * s.x_stride + i0, s.x_stride, rows, n, scratch);
      widen(a.w + o_first * s.w_stride + i0, s.w_stride, width, n, scratch + a.row_block * kSliceValues);
      p.x = scratch, p.x_stride = n;
      p.w = scratch + a.row_block * kSliceValues, p.w_stride = n;
    }
    for (size_t r = 0; r < rows;) {
      double* at = sums + r * width * kLanes;  // this row group's: R vectors per output
      switch (std::min<size_t>(4, rows - r)) {
        case 4: rows_against<Real, 4, 3>(a, p, r_first, o_first, r, width, at); r += 4; break;
        case 3: rows_against<Real, 3, 4>(a, p, r_first, o_first, r, width, at); r += 3; break;
        case 2: rows_against<Real, 2, 6>(a, p, r_first, o_first, r, width, at); r += 2; break;
        default: rows_against<Real, 1, 8>(a, p, r_first, o_first, r, width, at); r += 1; break;
      }
    }
  }
}

// The same operations compiled for AVX2 and for the x86-64 baseline (no FMA in either).
#if defined(__x86_64__)
[[gnu::target("avx2")]] void task_avx2(const Args<float>& a, size_t t, double* sums, double* scratch) {
  run_task(a, t, sums, scratch);
}
[[gnu::target("avx2")]] void task_avx2(const Args<double>& a, size_t t, double* sums, double* scratch) {
  run_task(a, t, sums, scratch);
}
bool has_avx2() { return __builtin_cpu_supports("avx2"); }
#else
template <class Real>
void task_avx2(const Args<Real>& a, size_t t, double* sums, double* scratch) {
  run_task(a, t, sums, scratch);
}
bool has_avx2() { return false; }
#endif
void task_base(const Args<float>& a, size_t t, double* sums, double* scratch) { run_task(a, t, sums, scratch); }
void task_base(const Args<double>& a, size_t t, double* sums, double* scratch) { run_task(a, t, sums, scratch); }

// Products below this many multiply-adds run on the calling thread (starting threads costs more).
constexpr size_t kParallelWork = size_t{1} << 21;

template <class Real>
void row_products_impl(const RowProducts& s, const Real* x, const Real* w, const Real* bias, Real scale, Real* y,
                       unsigned threads) {
  if (s.rows == 0 || s.outputs == 0) return;
  Args<Real> a{s, x, w, bias, scale, y, kRowBlock, kOutputBlock, (s.outputs + kOutputBlock - 1) / kOutputBlock};
  const size_t tasks = a.output_blocks * ((s.rows + a.row_block - 1) / a.row_block);
  const bool avx2 = !s.baseline_code && has_avx2();
  const unsigned workers = s.rows * s.outputs * s.depth < kParallelWork ? 1u : threads;
  // Each thread's lane sums between slices (a task's rows x outputs vectors) and widened slices.
  const size_t sums_per_task = a.row_block * a.output_block * kLanes;
  const size_t scratch_per_task = (a.row_block + a.output_block) * kSliceValues;
  parallel_for(tasks, workers, [&](size_t t) {
    thread_local std::vector<double> sums, scratch;
    if (sums.size() < sums_per_task) sums.resize(sums_per_task);
    if (scratch.size() < scratch_per_task) scratch.resize(scratch_per_task);
    avx2 ? task_avx2(a, t, sums.data(), scratch.data()) : task_base(a, t, sums.data(), scratch.data());
  });
}

template <class Real>
[[gnu::always_inline]] inline void weighted_rows_body(const Real* p, size_t count, const Real* v, size_t v_stride,
                                                      size_t dim, Real* out) {
  constexpr size_t L = kLanes;
  size_t d = 0;
  for (; d + 2 * L <= dim; d += 2 * L) {
    Sum s0 = {}, s1 = {};
    for (size_t j = 0; j < count; ++j) {
      const Sum pj = Sum{} + static_cast<double>(p[j]);
      s0 += pj * load(v + j * v_stride + d);
      s1 += pj * load(v + j * v_stride + d + L);
    }
    for (size_t l = 0; l < L; ++l) {
      out[d + l] = static_cast<Real>(s0[l]);
      out[d + L + l] = static_cast<Real>(s1[l]);
    }
  }
  for (; d < dim; ++d) {
    double sum = 0;
    for (size_t j = 0; j < count; ++j) {
      const double product = static_cast<double>(p[j]) * static_cast<double>(v[j * v_stride + d]);
      sum = sum + product;
    }
    out[d] = static_cast<Real>(sum);
  }
}
#if defined(__x86_64__)
[[gnu::target("avx2")]] void weighted_avx2(const float* p, size_t n, const float* v, size_t vs, size_t dim, float* o) {
  weighted_rows_body(p, n, v, vs, dim, o);
}
[[gnu::target("avx2")]] void weighted_avx2(const double* p, size_t n, const double* v, size_t vs, size_t dim, double* o) {
  weighted_rows_body(p, n, v, vs, dim, o);
}
#else
template <class Real>
void weighted_avx2(const Real* p, size_t n, const Real* v, size_t vs, size_t dim, Real* o) {
  weighted_rows_body(p, n, v, vs, dim, o);
}
#endif
template <class Real>
void weighted_rows_impl(const Real* p, size_t count, const Real* v, size_t v_stride, size_t dim, Real* out) {
  if (has_avx2()) {
    weighted_avx2(p, count, v, v_stride, dim, out);
  } else {
    weighted_rows_body(p, count, v, v_stride, dim, out);
  }
}

}  // namespace

void row_products(const RowProducts& shape, const float* x, const float* w, const float* bias, float scale, float* y,
                  unsigned threads) {
  row_products_impl(shape, x, w, bias, scale, y, threads);
}
void row_products(const RowProducts& shape, const double* x, const double* w, const double* bias, double scale,
                  double* y, unsigned threads) {
  row_products_impl(shape, x, w, bias, scale, y, threads);
}

void weighted_rows(const float* p, size_t count, const float* v, size_t v_stride, size_t dim, float* out) {
  weighted_rows_impl(p, count, v, v_stride, dim, out);
}
void weighted_rows(const double* p, size_t count, const double* v, size_t v_stride, size_t dim, double* out) {
  weighted_rows_impl(p, count, v, v_stride, dim, out);
}

}  // namespace gptoss::cpu

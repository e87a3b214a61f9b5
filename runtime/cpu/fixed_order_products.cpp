#include "runtime/cpu/fixed_order_products.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "formats/core/parallel_for.h"

namespace gptoss::cpu {
namespace {

template <class Real>
struct VecOf;
template <>
struct VecOf<float> {
  typedef float type [[gnu::vector_size(32)]];
};
template <>
struct VecOf<double> {
  typedef double type [[gnu::vector_size(32)]];
};
template <class Real>
using Vec = typename VecOf<Real>::type;
template <class Real>
constexpr size_t kLanes = 32 / sizeof(Real);

template <class Real>
[[gnu::always_inline]] inline Vec<Real> load(const Real* p) {
  Vec<Real> v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class Real>
[[gnu::always_inline]] inline void store(Real* p, Vec<Real> v) {
  std::memcpy(p, &v, sizeof v);
}
// The last `n` < kLanes values, the other lanes zero (a zero term leaves a lane's sum as it is).
template <class Real>
[[gnu::always_inline]] inline Vec<Real> load_tail(const Real* p, size_t n) {
  Vec<Real> v = {};
  std::memcpy(&v, p, n * sizeof(Real));
  return v;
}
// Lanes summed pairwise: lane l with lane l + half, halving until one is left.
template <class Real>
[[gnu::always_inline]] inline Real reduce(Vec<Real> v) {
  Real lanes[kLanes<Real>];
  std::memcpy(lanes, &v, sizeof v);
  for (size_t half = kLanes<Real> / 2; half >= 1; half /= 2)
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

// Depth is taken in slices of kSliceBytes per row, so the rows a tile reads stay in the L1 cache
// while it passes over a block of weights; a tile's lane sums wait in `sums` between slices
// (stored and reloaded exactly, so the order is unchanged).
constexpr size_t kSliceBytes = 2048;
// A task: up to kRowBlock rows against kTaskWeightBytes / kSliceBytes outputs (that block of
// weights stays in the L2 cache while every row of the task passes over it).
constexpr size_t kRowBlock = 128;
constexpr size_t kTaskWeightBytes = size_t{64} << 10;

// R rows x O outputs over depth [i0, i1): acc[r][o] += x_r · w_o, one vector at a time, the
// sums taken from and left in `sums` (R x O vectors), or reduced into y after the last slice.
template <class Real, size_t R, size_t O>
[[gnu::always_inline]] inline void tile(const Args<Real>& a, size_t r0, size_t o0, size_t i0, size_t i1,
                                        Real* sums) {
  constexpr size_t L = kLanes<Real>;
  const auto& s = a.shape;
  Vec<Real> acc[R][O];
  _Pragma("GCC unroll 8") for (size_t r = 0; r < R; ++r)
    _Pragma("GCC unroll 8") for (size_t o = 0; o < O; ++o) acc[r][o] = i0 == 0 ? Vec<Real>{} : load<Real>(sums + (r * O + o) * L);
  const Real* x = a.x + r0 * s.x_stride;
  const Real* w = a.w + o0 * s.w_stride;
  size_t i = i0;
  for (; i + L <= i1; i += L) {
    Vec<Real> wv[O];
    _Pragma("GCC unroll 8") for (size_t o = 0; o < O; ++o) wv[o] = load<Real>(w + o * s.w_stride + i);
    _Pragma("GCC unroll 8") for (size_t r = 0; r < R; ++r) {
      const Vec<Real> xv = load<Real>(x + r * s.x_stride + i);
      _Pragma("GCC unroll 8") for (size_t o = 0; o < O; ++o) acc[r][o] += xv * wv[o];
    }
  }
  if (i < i1) {  // the depth's last values (only in its last slice)
    const size_t n = i1 - i;
    Vec<Real> wv[O];
    _Pragma("GCC unroll 8") for (size_t o = 0; o < O; ++o) wv[o] = load_tail<Real>(w + o * s.w_stride + i, n);
    _Pragma("GCC unroll 8") for (size_t r = 0; r < R; ++r) {
      const Vec<Real> xv = load_tail<Real>(x + r * s.x_stride + i, n);
      _Pragma("GCC unroll 8") for (size_t o = 0; o < O; ++o) acc[r][o] += xv * wv[o];
    }
  }
  if (i1 < s.depth) {
    _Pragma("GCC unroll 8") for (size_t r = 0; r < R; ++r)
      _Pragma("GCC unroll 8") for (size_t o = 0; o < O; ++o) store<Real>(sums + (r * O + o) * L, acc[r][o]);
    return;
  }
  _Pragma("GCC unroll 8") for (size_t r = 0; r < R; ++r)
    _Pragma("GCC unroll 8") for (size_t o = 0; o < O; ++o) {
      Real value = reduce<Real>(acc[r][o]);
      if (a.scale != Real(1)) value *= a.scale;
      if (a.bias) value += a.bias[o0 + o];
      a.y[(r0 + r) * s.y_stride + o0 + o] = value;
    }
}

// R rows against outputs [o0, o1) over one slice: O outputs at a time (eight sums in flight), then
// one at a time. `sums` holds R vectors per output of the task's block.
template <class Real, size_t R, size_t O>
[[gnu::always_inline]] inline void rows_against(const Args<Real>& a, size_t r0, size_t o0, size_t o1, size_t i0,
                                                size_t i1, Real* sums) {
  size_t o = o0;
  for (; o + O <= o1; o += O) tile<Real, R, O>(a, r0, o, i0, i1, sums + (o - o0) * R * kLanes<Real>);
  for (; o < o1; ++o) tile<Real, R, 1>(a, r0, o, i0, i1, sums + (o - o0) * R * kLanes<Real>);
}

// One task: a block of rows against a block of outputs, slice by slice of the depth.
template <class Real>
[[gnu::always_inline]] inline void run_task(const Args<Real>& a, size_t task, Real* sums) {
  const auto& s = a.shape;
  const size_t r_first = (task / a.output_blocks) * a.row_block, o0 = (task % a.output_blocks) * a.output_block;
  const size_t r_end = std::min(s.rows, r_first + a.row_block), o1 = std::min(s.outputs, o0 + a.output_block);
  const size_t slice = std::max(kLanes<Real>, kSliceBytes / sizeof(Real));
  const size_t width = o1 - o0;
  for (size_t i0 = 0; i0 < s.depth; i0 += slice) {
    const size_t i1 = std::min(s.depth, i0 + slice);
    for (size_t r = r_first; r < r_end;) {
      Real* at = sums + (r - r_first) * width * kLanes<Real>;  // this row group's: R vectors per output
      switch (std::min<size_t>(4, r_end - r)) {
        case 4: rows_against<Real, 4, 3>(a, r, o0, o1, i0, i1, at); r += 4; break;
        case 3: rows_against<Real, 3, 4>(a, r, o0, o1, i0, i1, at); r += 3; break;
        case 2: rows_against<Real, 2, 6>(a, r, o0, o1, i0, i1, at); r += 2; break;
        default: rows_against<Real, 1, 8>(a, r, o0, o1, i0, i1, at); r += 1; break;
      }
    }
  }
}

// The same operations compiled for AVX2 and for the x86-64 baseline (no FMA in either).
#if defined(__x86_64__)
[[gnu::target("avx2")]] void task_avx2(const Args<float>& a, size_t t, float* sums) { run_task(a, t, sums); }
[[gnu::target("avx2")]] void task_avx2(const Args<double>& a, size_t t, double* sums) { run_task(a, t, sums); }
bool has_avx2() { return __builtin_cpu_supports("avx2"); }
#else
template <class Real>
void task_avx2(const Args<Real>& a, size_t t, Real* sums) { run_task(a, t, sums); }
bool has_avx2() { return false; }
#endif
void task_base(const Args<float>& a, size_t t, float* sums) { run_task(a, t, sums); }
void task_base(const Args<double>& a, size_t t, double* sums) { run_task(a, t, sums); }

// Products below this many multiply-adds run on the calling thread (starting threads costs more).
constexpr size_t kParallelWork = size_t{1} << 21;

template <class Real>
void row_products_impl(const RowProducts& s, const Real* x, const Real* w, const Real* bias, Real scale, Real* y,
                       unsigned threads) {
  if (s.rows == 0 || s.outputs == 0) return;
  Args<Real> a{s, x, w, bias, scale, y, kRowBlock, 0, 0};
  a.output_block = kTaskWeightBytes / kSliceBytes;
  a.output_blocks = (s.outputs + a.output_block - 1) / a.output_block;
  const size_t tasks = a.output_blocks * ((s.rows + a.row_block - 1) / a.row_block);
  const bool avx2 = !s.baseline_code && has_avx2();
  const unsigned workers = s.rows * s.outputs * s.depth < kParallelWork ? 1u : threads;
  // Each thread's lane sums between slices: a task's rows x outputs vectors.
  const size_t sums_per_task = a.row_block * a.output_block * kLanes<Real>;
  parallel_for(tasks, workers, [&](size_t t) {
    thread_local std::vector<Real> sums;
    if (sums.size() < sums_per_task) sums.resize(sums_per_task);
    avx2 ? task_avx2(a, t, sums.data()) : task_base(a, t, sums.data());
  });
}

template <class Real>
[[gnu::always_inline]] inline void weighted_rows_body(const Real* p, size_t count, const Real* v, size_t v_stride,
                                                      size_t dim, Real* out) {
  constexpr size_t L = kLanes<Real>;
  size_t d = 0;
  for (; d + 2 * L <= dim; d += 2 * L) {
    Vec<Real> s0 = {}, s1 = {};
    for (size_t j = 0; j < count; ++j) {
      const Vec<Real> pj = Vec<Real>{} + p[j];
      s0 += pj * load<Real>(v + j * v_stride + d);
      s1 += pj * load<Real>(v + j * v_stride + d + L);
    }
    std::memcpy(out + d, &s0, sizeof s0);
    std::memcpy(out + d + L, &s1, sizeof s1);
  }
  for (; d < dim; ++d) {
    Real sum = 0;
    for (size_t j = 0; j < count; ++j) sum += p[j] * v[j * v_stride + d];
    out[d] = sum;
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

#pragma once
// The CPU engine's products, summed in one fixed order so that a value depends only on its own
// operands: never on how many other rows the call holds, how the work is split over threads, or
// which machine runs it. A checker's logits must not change with the batch (a prefill of N tokens
// and the first N rows of a prefill of N + k, one token at a time and all at once); an optimized
// BLAS promises none of that (OpenBLAS picks kernels and blockings by core type and by the matrix
// shape, so OPENBLAS_CORETYPE alone changed the engine's last bits).
//
// The order: a dot product of length n over 4 lanes of doubles, whatever Real is: element i's
// product, in double (exact for f32 inputs), added to lane i mod 4 in increasing i, each a
// rounded product and then a rounded sum (no fused multiply-add: the file is built with
// -ffp-contract=off, so a machine with FMA computes the same bits as one without); the lanes then
// summed pairwise, lane l with lane l + 2, then lane 0 with lane 1; times the scale and plus the
// bias in double; rounded to Real once. Summing in double keeps an f32 engine's products as
// accurate as their f32 inputs allow: the rounding of a long f32 sum (~1e-6 relative over the
// model's 2880-wide rows) is what sent a near tie of two router logits the other way from f64.
// Vector code is plain GCC/Clang vector extensions, compiled twice (AVX2 and the x86-64 baseline)
// and picked at run time: both evaluate exactly these operations.
#include <cstddef>

namespace gptoss::cpu {

// Dot products of rows: y[r * y_stride + o] = dot(x[r * x_stride ..], w[o * w_stride ..]) over `depth`
// values, times `scale` where scale != 1, plus bias[o] where bias is not null, for r < rows,
// o < outputs. Work is spread over up to `threads` threads (0: every core) when it is large
// enough; the values do not depend on it.
struct RowProducts {
  size_t rows = 0, outputs = 0, depth = 0;
  size_t x_stride = 0, w_stride = 0, y_stride = 0;
  // The x86-64 baseline code even where the machine has AVX2 (tests: both give the same bits).
  bool baseline_code = false;
};
void row_products(const RowProducts& shape, const float* x, const float* w, const float* bias, float scale, float* y,
                  unsigned threads = 0);
void row_products(const RowProducts& shape, const double* x, const double* w, const double* bias, double scale,
                  double* y, unsigned threads = 0);

// out[d] = Σ_j p[j] · v[j * v_stride + d] for d < dim, j increasing from 0 to count - 1 (one
// sequential sum in double per d, rounded to Real once: the weighted sum of attention values).
void weighted_rows(const float* p, size_t count, const float* v, size_t v_stride, size_t dim, float* out);
void weighted_rows(const double* p, size_t count, const double* v, size_t v_stride, size_t dim, double* out);

}  // namespace gptoss::cpu

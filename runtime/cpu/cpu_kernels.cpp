#include "runtime/cpu/cpu_kernels.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "runtime/cpu/fixed_order_products.h"

namespace gptoss::cpu {
namespace {

template <class Real>
void linear_impl(const Real* x, size_t rows, size_t in, const Real* weight, size_t out, const Real* bias, Real* y) {
  RowProducts shape;
  shape.rows = rows, shape.outputs = out, shape.depth = in;
  shape.x_stride = in, shape.w_stride = in, shape.y_stride = out;
  row_products(shape, x, weight, bias, Real(1), y);
}

// 1 / rms of a row, unrounded: rms_norm's factor before it is rounded to Real.
template <class Real>
double inverse_rms(const Real* row, size_t dim, double eps) {
  double sum_squares = 0;
  for (size_t i = 0; i < dim; ++i) sum_squares += static_cast<double>(row[i]) * row[i];
  return 1.0 / std::sqrt(sum_squares / static_cast<double>(dim) + eps);
}

template <class Real>
void rms_norm_impl(const Real* x, size_t rows, size_t dim, const Real* weight, double eps, Real* y) {
  for (size_t r = 0; r < rows; ++r) {
    const Real* row = x + r * dim;
    const auto inv_rms = static_cast<Real>(inverse_rms(row, dim, eps));
    for (size_t i = 0; i < dim; ++i) y[r * dim + i] = row[i] * inv_rms * weight[i];
  }
}

template <class Real>
void router_logits_impl(const Real* x, size_t rows, size_t dim, const Real* norm, double eps, const double* weight,
                        size_t experts, const Real* bias, Real* logits) {
  std::vector<double> scaled(rows * dim), sums(rows * experts);
  for (size_t r = 0; r < rows; ++r)
    for (size_t i = 0; i < dim; ++i)
      scaled[r * dim + i] = static_cast<double>(x[r * dim + i]) * static_cast<double>(norm[i]);
  linear(scaled.data(), rows, dim, weight, experts, nullptr, sums.data());
  for (size_t r = 0; r < rows; ++r) {
    const double factor = inverse_rms(x + r * dim, dim, eps);
    for (size_t e = 0; e < experts; ++e)
      logits[r * experts + e] = static_cast<Real>(sums[r * experts + e] * factor + static_cast<double>(bias[e]));
  }
}

template <class Real>
void apply_rope_impl(Real* heads, size_t head_count, size_t head_dim, const Real* cos_table, const Real* sin_table) {
  const size_t half = head_dim / 2;
  for (size_t h = 0; h < head_count; ++h) {
    Real* x = heads + h * head_dim;
    for (size_t i = 0; i < half; ++i) {
      const Real a = x[i], b = x[i + half];
      x[i] = a * cos_table[i] - b * sin_table[i];
      x[i + half] = b * cos_table[i] + a * sin_table[i];
    }
  }
}

template <class Real>
std::vector<uint32_t> top_k_impl(std::span<const Real> logits, size_t k) {
  std::vector<uint32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0u);
  k = std::min(k, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                    [&](uint32_t a, uint32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  order.resize(k);
  return order;
}

template <class Real>
std::vector<Real> softmax_of_impl(std::span<const Real> logits, std::span<const uint32_t> selected) {
  std::vector<Real> weights(selected.size());
  if (selected.empty()) return weights;
  Real max_logit = logits[selected[0]];
  for (uint32_t e : selected) max_logit = std::max(max_logit, logits[e]);
  Real sum = 0;
  for (size_t i = 0; i < selected.size(); ++i) sum += weights[i] = std::exp(logits[selected[i]] - max_logit);
  for (Real& w : weights) w /= sum;
  return weights;
}

template <class Real>
void swiglu_impl(const Real* gate_up, size_t intermediate, Real limit, Real* act) {
  const auto alpha = static_cast<Real>(kSwigluAlpha);  // the f32 constant in both precisions, as transformers
  for (size_t j = 0; j < intermediate; ++j) {
    const Real gate = std::min(gate_up[2 * j], limit);
    const Real up = std::clamp(gate_up[2 * j + 1], -limit, limit);
    const Real glu = gate / (Real(1) + std::exp(-alpha * gate));
    act[j] = (up + Real(1)) * glu;
  }
}

}  // namespace

void linear(const float* x, size_t rows, size_t in, const float* weight, size_t out, const float* bias, float* y) {
  linear_impl(x, rows, in, weight, out, bias, y);
}
void linear(const double* x, size_t rows, size_t in, const double* weight, size_t out, const double* bias, double* y) {
  linear_impl(x, rows, in, weight, out, bias, y);
}

void rms_norm(const float* x, size_t rows, size_t dim, const float* weight, double eps, float* y) {
  rms_norm_impl(x, rows, dim, weight, eps, y);
}
void rms_norm(const double* x, size_t rows, size_t dim, const double* weight, double eps, double* y) {
  rms_norm_impl(x, rows, dim, weight, eps, y);
}

void router_logits(const float* x, size_t rows, size_t dim, const float* norm, double eps, const double* weight,
                   size_t experts, const float* bias, float* logits) {
  router_logits_impl(x, rows, dim, norm, eps, weight, experts, bias, logits);
}
void router_logits(const double* x, size_t rows, size_t dim, const double* norm, double eps, const double* weight,
                   size_t experts, const double* bias, double* logits) {
  router_logits_impl(x, rows, dim, norm, eps, weight, experts, bias, logits);
}

void apply_rope_half_split(float* heads, size_t head_count, size_t head_dim, const float* cos_table,
                           const float* sin_table) {
  apply_rope_impl(heads, head_count, head_dim, cos_table, sin_table);
}
void apply_rope_half_split(double* heads, size_t head_count, size_t head_dim, const double* cos_table,
                           const double* sin_table) {
  apply_rope_impl(heads, head_count, head_dim, cos_table, sin_table);
}

std::vector<uint32_t> top_k_experts(std::span<const float> logits, size_t k) { return top_k_impl(logits, k); }
std::vector<uint32_t> top_k_experts(std::span<const double> logits, size_t k) { return top_k_impl(logits, k); }

std::vector<float> softmax_of(std::span<const float> logits, std::span<const uint32_t> selected) {
  return softmax_of_impl(logits, selected);
}
std::vector<double> softmax_of(std::span<const double> logits, std::span<const uint32_t> selected) {
  return softmax_of_impl(logits, selected);
}

void swiglu_interleaved(const float* gate_up, size_t intermediate, float limit, float* act) {
  swiglu_impl(gate_up, intermediate, limit, act);
}
void swiglu_interleaved(const double* gate_up, size_t intermediate, double limit, double* act) {
  swiglu_impl(gate_up, intermediate, limit, act);
}

}  // namespace gptoss::cpu

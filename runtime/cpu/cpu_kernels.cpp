#include "runtime/cpu/cpu_kernels.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace gptoss::cpu {

void linear(const float* x, size_t rows, size_t in, const float* weight, size_t out, const float* bias, float* y) {
  if (rows == 0) return;
  const auto m = static_cast<blasint>(rows), n = static_cast<blasint>(out), k = static_cast<blasint>(in);
  float beta = 0.0f;
  if (bias) {
    for (size_t r = 0; r < rows; ++r) std::copy(bias, bias + out, y + r * out);
    beta = 1.0f;
  }
  if (rows == 1) {
    cblas_sgemv(CblasRowMajor, CblasNoTrans, n, k, 1.0f, weight, k, x, 1, beta, y, 1);
  } else {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, x, k, weight, k, beta, y, n);
  }
}

void rms_norm(const float* x, size_t rows, size_t dim, const float* weight, double eps, float* y) {
  for (size_t r = 0; r < rows; ++r) {
    const float* row = x + r * dim;
    double sum_squares = 0;
    for (size_t i = 0; i < dim; ++i) sum_squares += static_cast<double>(row[i]) * row[i];
    const auto inv_rms = static_cast<float>(1.0 / std::sqrt(sum_squares / static_cast<double>(dim) + eps));
    for (size_t i = 0; i < dim; ++i) y[r * dim + i] = row[i] * inv_rms * weight[i];
  }
}

void rope_table(uint64_t position, std::span<const float> inv_freq, float concentration, float* cos_out,
                float* sin_out) {
  const auto pos = static_cast<float>(position);
  for (size_t i = 0; i < inv_freq.size(); ++i) {
    const float angle = pos * inv_freq[i];
    cos_out[i] = std::cos(angle) * concentration;
    sin_out[i] = std::sin(angle) * concentration;
  }
}

void apply_rope_half_split(float* heads, size_t head_count, size_t head_dim, const float* cos_table,
                           const float* sin_table) {
  const size_t half = head_dim / 2;
  for (size_t h = 0; h < head_count; ++h) {
    float* x = heads + h * head_dim;
    for (size_t i = 0; i < half; ++i) {
      const float a = x[i], b = x[i + half];
      x[i] = a * cos_table[i] - b * sin_table[i];
      x[i + half] = b * cos_table[i] + a * sin_table[i];
    }
  }
}

std::vector<uint32_t> top_k_experts(std::span<const float> logits, size_t k) {
  std::vector<uint32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0u);
  k = std::min(k, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                    [&](uint32_t a, uint32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  order.resize(k);
  return order;
}

std::vector<float> softmax_of(std::span<const float> logits, std::span<const uint32_t> selected) {
  std::vector<float> weights(selected.size());
  if (selected.empty()) return weights;
  float max_logit = logits[selected[0]];
  for (uint32_t e : selected) max_logit = std::max(max_logit, logits[e]);
  float sum = 0;
  for (size_t i = 0; i < selected.size(); ++i) sum += weights[i] = std::exp(logits[selected[i]] - max_logit);
  for (float& w : weights) w /= sum;
  return weights;
}

void swiglu_interleaved(const float* gate_up, size_t intermediate, float limit, float* act) {
  for (size_t j = 0; j < intermediate; ++j) {
    const float gate = std::min(gate_up[2 * j], limit);
    const float up = std::clamp(gate_up[2 * j + 1], -limit, limit);
    const float glu = gate / (1.0f + std::exp(-kSwigluAlpha * gate));
    act[j] = (up + 1.0f) * glu;
  }
}

}  // namespace gptoss::cpu

#include "runtime/cpu/cpu_forward.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "formats/core/float16.h"
#include "formats/core/parallel_for.h"
#include "runtime/cpu/cpu_kernels.h"
#include "runtime/rope.h"
#include "runtime/cpu/fixed_order_products.h"

namespace gptoss::cpu {
namespace {

// An expert is decoded in slices of about this many values, one slice per task; an expert smaller
// than kParallelDecodeValues (preset a's are 12288) is decoded on the calling thread alone.
constexpr uint64_t kDecodeSliceValues = 1u << 18;
constexpr uint64_t kParallelDecodeValues = 1u << 20;

}  // namespace

template <class Real>
ForwardPass<Real>::ForwardPass(BasicCpuWeights<Real> weights, runtime::KvCacheType kv_cache)
    : weights_(std::move(weights)), kv_cache_type_(kv_cache) {
  const auto yarn = compute_yarn(weights_.config);
  inv_freq_ = yarn.inv_freq;
  concentration_ = static_cast<float>(yarn.concentration);
  k_cache_.resize(weights_.config.num_layers);
  v_cache_.resize(weights_.config.num_layers);
}

template <class Real>
void ForwardPass<Real>::ensure_cache_capacity(uint64_t tokens) {
  if (tokens <= cache_capacity_) return;
  cache_capacity_ = std::max<uint64_t>(tokens, cache_capacity_ * 2);
  const size_t kv_rows = weights_.config.kv_rows();
  for (auto& k : k_cache_) k.resize(cache_capacity_ * kv_rows);
  for (auto& v : v_cache_) v.resize(cache_capacity_ * kv_rows);
}

template <class Real>
void ForwardPass<Real>::forward(std::span<const uint32_t> tokens, runtime::LogitRows rows, std::span<float> logits,
                                const runtime::ActivationObserver& observer) {
  using runtime::LogitRows;
  using runtime::Stage;
  const auto& c = weights_.config;
  const size_t count = tokens.size();
  const size_t hidden = c.hidden_size;
  ensure_cache_capacity(position_ + count);

  std::vector<float> narrowed;  // the f64 engine reports its activations rounded to f32
  auto observe = [&](Stage stage, int layer, const std::vector<Real>& values) {
    if (!observer) return;
    if constexpr (std::is_same_v<Real, float>) {
      observer({stage, layer, position_, count, hidden, values});
    } else {
      narrowed.assign(values.begin(), values.end());
      observer({stage, layer, position_, count, hidden, narrowed});
    }
  };
  auto observe_choices = [&](int layer) {
    if (observer) observer({Stage::RouterChoices, layer, position_, count, c.experts_per_token, router_choices_});
  };

  std::vector<Real> x(count * hidden);
  if constexpr (std::is_same_v<Real, float>) {
    for (size_t t = 0; t < count; ++t) weights_.embedding.decode_row(tokens[t], x.data() + t * hidden);
  } else {
    std::vector<float> row(hidden);  // widened exactly
    for (size_t t = 0; t < count; ++t) {
      weights_.embedding.decode_row(tokens[t], row.data());
      std::copy(row.begin(), row.end(), x.data() + t * hidden);
    }
  }
  observe(Stage::Embedding, -1, x);

  std::vector<Real> normed(count * hidden), block_out(count * hidden);
  for (uint32_t l = 0; l < c.num_layers; ++l) {
    const auto& w = weights_.layers[l];
    rms_norm(x.data(), count, hidden, w.attn_norm.data(), c.rms_norm_eps, normed.data());
    attention_block(l, normed.data(), count, block_out.data());
    for (size_t i = 0; i < x.size(); ++i) x[i] += block_out[i];
    observe(Stage::AttentionOutput, static_cast<int>(l), x);
    rms_norm(x.data(), count, hidden, w.mlp_norm.data(), c.rms_norm_eps, normed.data());
    moe_block(l, x.data(), normed.data(), count, block_out.data());
    for (size_t i = 0; i < x.size(); ++i) x[i] += block_out[i];
    observe_choices(static_cast<int>(l));
    observe(Stage::LayerOutput, static_cast<int>(l), x);
  }
  rms_norm(x.data(), count, hidden, weights_.final_norm.data(), c.rms_norm_eps, normed.data());
  observe(Stage::FinalNorm, -1, normed);
  position_ += count;

  const size_t first = rows.first_row(count), logit_rows = rows.row_count(count);
  if (logit_rows == 0) return;
  // Each row's logits are its own: Last, All and ranges give the same bits for the same position.
  const Real* input = normed.data() + first * hidden;
  if constexpr (std::is_same_v<Real, float>) {
    linear(input, logit_rows, hidden, weights_.unembedding.data(), c.vocab_size, nullptr, logits.data());
  } else {
    std::vector<Real> wide(logit_rows * c.vocab_size);
    linear(input, logit_rows, hidden, weights_.unembedding.data(), c.vocab_size, nullptr, wide.data());
    std::copy(wide.begin(), wide.end(), logits.begin());
  }
}

// Attention of `count` new tokens (positions position_ .. position_ + count - 1) over the cache
// and themselves; `x` is the normed input, `out` gets o·Woᵀ + bo.
template <class Real>
void ForwardPass<Real>::attention_block(uint32_t layer, const Real* x, size_t count, Real* out) {
  const auto& c = weights_.config;
  const auto& w = weights_.layers[layer];
  const size_t hidden = c.hidden_size, head_dim = c.head_dim, q_rows = c.q_rows(), kv_rows = c.kv_rows();
  std::vector<Real> q(count * q_rows);
  linear(x, count, hidden, w.q.data(), q_rows, w.q_bias.data(), q.data());
  Real* k = k_cache_[layer].data() + position_ * kv_rows;  // new rows go straight into the cache
  Real* v = v_cache_[layer].data() + position_ * kv_rows;
  linear(x, count, hidden, w.k.data(), kv_rows, w.k_bias.data(), k);
  linear(x, count, hidden, w.v.data(), kv_rows, w.v_bias.data(), v);

  std::vector<Real> cos_table(head_dim / 2), sin_table(head_dim / 2);
  for (size_t t = 0; t < count; ++t) {
    runtime::rope_table(position_ + t, inv_freq_, concentration_, cos_table.data(), sin_table.data());
    apply_rope_half_split(q.data() + t * q_rows, c.num_heads, head_dim, cos_table.data(), sin_table.data());
    apply_rope_half_split(k + t * kv_rows, c.num_kv_heads, head_dim, cos_table.data(), sin_table.data());
  }
  if (kv_cache_type_ == runtime::KvCacheType::F16) {
    // What an f16 cache holds (round to nearest even, as the Vulkan engine's packHalf2x16 on the
    // devices we know); every later step reads these values, the new tokens' own included.
    auto to_f16 = [](Real value) { return static_cast<Real>(f16_to_f32(f32_to_f16(static_cast<float>(value)))); };
    std::transform(k, k + count * kv_rows, k, to_f16);
    std::transform(v, v + count * kv_rows, v, to_f16);
  }

  // Per query head and token: the scores of the keys it sees (one fixed-order dot product each),
  // the softmax with the sink as an extra term, then the probabilities' weighted sum of the values
  // (sequential over the keys). A token's numbers depend on its own query and the cache only.
  const size_t keys = position_ + count;
  const Real scale = Real(1) / std::sqrt(static_cast<Real>(head_dim));
  const bool sliding = c.is_sliding(layer);
  std::vector<Real> attn(count * q_rows);
  const Real* k_all = k_cache_[layer].data();
  const Real* v_all = v_cache_[layer].data();
  const size_t work = c.num_heads * count * keys * head_dim;
  parallel_for(c.num_heads, work < (size_t{1} << 21) ? 1 : 0, [&](size_t h) {
    const size_t kv_head = c.kv_head_for(static_cast<uint32_t>(h));  // h / (heads / kv_heads), never h % kv_heads
    const Real sink = w.sinks[h];
    std::vector<Real> p(keys);
    for (size_t t = 0; t < count; ++t) {
      const uint64_t query_pos = position_ + t;
      // Sliding layers see the W most recent keys including the query itself: t - W < j <= t.
      const uint64_t first_key = sliding && query_pos + 1 > c.sliding_window ? query_pos + 1 - c.sliding_window : 0;
      const size_t seen = query_pos + 1 - first_key;
      RowProducts shape;
      shape.rows = 1, shape.outputs = seen, shape.depth = head_dim;
      shape.x_stride = head_dim, shape.w_stride = kv_rows, shape.y_stride = seen;
      row_products(shape, q.data() + t * q_rows + h * head_dim, k_all + first_key * kv_rows + kv_head * head_dim,
                   nullptr, scale, p.data(), 1);
      Real max_logit = sink;
      for (size_t j = 0; j < seen; ++j) max_logit = std::max(max_logit, p[j]);
      Real denominator = std::exp(sink - max_logit);
      for (size_t j = 0; j < seen; ++j) denominator += p[j] = std::exp(p[j] - max_logit);
      for (size_t j = 0; j < seen; ++j) p[j] /= denominator;
      weighted_rows(p.data(), seen, v_all + first_key * kv_rows + kv_head * head_dim, kv_rows, head_dim,
                    attn.data() + t * q_rows + h * head_dim);
    }
  });
  linear(attn.data(), count, q_rows, w.out.data(), hidden, w.out_bias.data(), out);
}

// Expert `expert` of `layer`, mlp1 and mlp2, from their encoding into mlp1_rows_ and mlp2_rows_ (exact:
// the values of decode_all), row slices spread over the cores.
template <class Real>
void ForwardPass<Real>::decode_expert(uint32_t layer, uint64_t expert) {
  const auto& w = weights_.layers[layer];
  const ExpertMatrices* matrices[2] = {&w.mlp1, &w.mlp2};
  std::vector<Real>* targets[2] = {&mlp1_rows_, &mlp2_rows_};
  uint64_t slice_rows[2], slices[2], values = 0;
  for (int m = 0; m < 2; ++m) {
    const auto& matrix = *matrices[m];
    targets[m]->resize(matrix.rows() * matrix.columns());
    slice_rows[m] = std::max<uint64_t>(1, kDecodeSliceValues / std::max<uint64_t>(1, matrix.columns()));
    slices[m] = (matrix.rows() + slice_rows[m] - 1) / slice_rows[m];
    values += matrix.rows() * matrix.columns();
  }
  parallel_for(slices[0] + slices[1], values >= kParallelDecodeValues ? 0 : 1, [&](size_t i) {
    const int m = i < slices[0] ? 0 : 1;
    const uint64_t slice = m == 0 ? i : i - slices[0];
    const auto& matrix = *matrices[m];
    const uint64_t first = slice * slice_rows[m], rows = std::min(slice_rows[m], matrix.rows() - first);
    matrix.decode_rows(expert, first, rows, targets[m]->data() + first * matrix.columns());
  });
}

// The mixture of experts: router top-k (its logits from the residual stream `residual`,
// router_logits), softmax over the k, and per chosen expert its weights decoded from its encoding,
// then one GEMM over the tokens that chose it (x, the normalized input). `out` gets
// Σ_e w_e · (W2 act + b2).
template <class Real>
void ForwardPass<Real>::moe_block(uint32_t layer, const Real* residual, const Real* x, size_t count, Real* out) {
  const auto& c = weights_.config;
  const auto& w = weights_.layers[layer];
  const size_t hidden = c.hidden_size, experts = c.num_experts, inter = c.intermediate_size;
  std::vector<Real> router(count * experts);
  router_logits(residual, count, hidden, w.mlp_norm.data(), c.rms_norm_eps, w.router.data(), experts,
                w.router_bias.data(), router.data());

  struct Assignment {
    size_t token;
    Real weight;
  };
  std::vector<std::vector<Assignment>> by_expert(experts);
  router_choices_.assign(count * c.experts_per_token, 0.0f);
  for (size_t t = 0; t < count; ++t) {
    const std::span<const Real> logits(router.data() + t * experts, experts);
    const auto chosen = top_k_experts(logits, c.experts_per_token);
    const auto gate_weights = softmax_of(logits, chosen);
    for (size_t i = 0; i < chosen.size(); ++i) {
      by_expert[chosen[i]].push_back({t, gate_weights[i]});
      router_choices_[t * c.experts_per_token + i] = static_cast<float>(chosen[i]);
    }
  }

  std::fill(out, out + count * hidden, Real(0));
  std::vector<Real> gathered, gate_up, act, down;
  const auto limit = static_cast<Real>(c.swiglu_limit);
  for (size_t e = 0; e < experts; ++e) {
    const auto& assigned = by_expert[e];
    if (assigned.empty()) continue;
    const size_t n = assigned.size();
    gathered.resize(n * hidden);
    for (size_t i = 0; i < n; ++i) std::copy_n(x + assigned[i].token * hidden, hidden, gathered.data() + i * hidden);
    const Real *mlp1 = nullptr, *mlp2 = nullptr;
    if (w.mlp1_decoded.empty()) {
      decode_expert(layer, e);
      mlp1 = mlp1_rows_.data();
      mlp2 = mlp2_rows_.data();
    } else {  // predecode_experts
      mlp1 = w.mlp1_decoded.data() + e * 2 * inter * hidden;
      mlp2 = w.mlp2_decoded.data() + e * hidden * inter;
    }
    gate_up.resize(n * 2 * inter);
    linear(gathered.data(), n, hidden, mlp1, 2 * inter, w.mlp1_bias.data() + e * 2 * inter, gate_up.data());
    act.resize(n * inter);
    for (size_t i = 0; i < n; ++i) swiglu_interleaved(gate_up.data() + i * 2 * inter, inter, limit, act.data() + i * inter);
    down.resize(n * hidden);
    linear(act.data(), n, inter, mlp2, hidden, w.mlp2_bias.data() + e * hidden, down.data());
    for (size_t i = 0; i < n; ++i) {
      Real* row = out + assigned[i].token * hidden;
      for (size_t d = 0; d < hidden; ++d) row[d] += assigned[i].weight * down[i * hidden + d];
    }
  }
}

template class ForwardPass<float>;
template class ForwardPass<double>;

}  // namespace gptoss::cpu

// One decoder layer at the real 20b widths (hidden 2880, 64/8 heads, intermediate 2880; 4
// experts, 2 per token, and a 2048-row vocabulary slice so every tensor fits lavapipe's 128 MiB
// bindings and the test stays a few seconds on lavapipe: the experts' count and top-k change no
// width)
// against a double-precision reference written out step by step here: the Vulkan engine's error
// must be of the CPU engine's size. Preset a is too narrow to exercise the kernels' wide paths
// (32 lanes per matvec row, 90-block MXFP4 rows), and synthetic weights give activations ~1e3,
// where f32 accumulation order alone shows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "convert/synthesize.h"
#include "runtime/cpu/cpu_engine.h"
#include "runtime/cpu/cpu_kernels.h"
#include "runtime/rope.h"
#include "runtime/cpu/cpu_weights.h"
#include "runtime/vulkan/kernels.h"
#include "runtime/vulkan/vulkan_engine.h"
#include "tests/vulkan/vulkan_test_support.h"

namespace gptoss::test {
namespace {

using Doubles = std::vector<double>;

// y = W x + b in double; W rows start at weight_offset, bias at bias_offset.
template <class Weight>  // float, or double (the router's, as the CPU engine holds it)
Doubles linear_double(const Doubles& x, const std::vector<Weight>& weight, const std::vector<float>& bias, size_t out,
                      size_t weight_offset = 0, size_t bias_offset = 0) {
  const size_t in = x.size();
  Doubles y(out);
  for (size_t r = 0; r < out; ++r) {
    double sum = bias[bias_offset + r];
    for (size_t k = 0; k < in; ++k) sum += static_cast<double>(weight[weight_offset + r * in + k]) * x[k];
    y[r] = sum;
  }
  return y;
}

Doubles rms_norm_double(const Doubles& x, const std::vector<float>& weight, double eps) {
  double sum_squares = 0;
  for (double v : x) sum_squares += v * v;
  const double inv_rms = 1 / std::sqrt(sum_squares / static_cast<double>(x.size()) + eps);
  Doubles y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * inv_rms * weight[i];
  return y;
}

CanonicalModel wide_one_layer_model() {
  const SynthPreset preset{"wide", 1, 2880, 2880, 64, 8, 64, 4, 2, 201088, 128, 1};
  auto model = synthesize_model(preset);
  constexpr uint32_t kVocabRows = 2048;  // the first rows only, so (un)embedding fit one binding
  model.config.vocab_size = kVocabRows;
  for (auto& tensor : model.tensors)
    if (tensor.spec.role == TensorRole::Embedding || tensor.spec.role == TensorRole::Unembedding) {
      std::vector<uint8_t> bytes(*dtype_byte_size(tensor.dtype, uint64_t{kVocabRows} * tensor.spec.shape[1]));
      tensor.source->read(0, bytes);
      tensor.spec.shape[0] = kVocabRows;
      tensor.source = std::make_shared<OwnedSource>(std::move(bytes));
    }
  return model;
}

// The residual stream after layer 0 for every token, in double.
std::vector<Doubles> reference_layer_zero(const cpu::CpuWeights& weights, const std::vector<uint32_t>& ids) {
  const auto& c = weights.config;
  const auto& w = weights.layers[0];
  const size_t hidden = c.hidden_size, head_dim = c.head_dim, half = head_dim / 2;
  const auto yarn = compute_yarn(c);
  const size_t inter = c.intermediate_size;
  std::vector<std::vector<float>> mlp1(c.num_experts), mlp2(c.num_experts);  // decoded from MXFP4 on first use
  std::vector<Doubles> keys, values, outputs;
  for (size_t t = 0; t < ids.size(); ++t) {
    std::vector<float> row(hidden);
    weights.embedding.decode_row(ids[t], row.data());
    Doubles x(row.begin(), row.end());
    const Doubles normed = rms_norm_double(x, w.attn_norm, c.rms_norm_eps);
    Doubles q = linear_double(normed, w.q, w.q_bias, c.q_rows());
    Doubles k = linear_double(normed, w.k, w.k_bias, c.kv_rows());
    keys.push_back({});
    values.push_back(linear_double(normed, w.v, w.v_bias, c.kv_rows()));
    std::vector<float> cos_table(half), sin_table(half);
    runtime::rope_table(t, yarn.inv_freq, static_cast<float>(yarn.concentration), cos_table.data(), sin_table.data());
    auto rotate = [&](Doubles& heads, size_t count) {
      for (size_t h = 0; h < count; ++h)
        for (size_t i = 0; i < half; ++i) {
          const double a = heads[h * head_dim + i], b = heads[h * head_dim + i + half];
          heads[h * head_dim + i] = a * cos_table[i] - b * sin_table[i];
          heads[h * head_dim + i + half] = b * cos_table[i] + a * sin_table[i];
        }
    };
    rotate(q, c.num_heads);
    rotate(k, c.num_kv_heads);
    keys.back() = k;
    Doubles attention(c.q_rows());
    for (uint32_t h = 0; h < c.num_heads; ++h) {
      const size_t kv = c.kv_head_for(h);
      Doubles scores;
      double max_score = w.sinks[h];
      for (size_t j = 0; j <= t; ++j) {
        double dot = 0;
        for (size_t d = 0; d < head_dim; ++d) dot += q[h * head_dim + d] * keys[j][kv * head_dim + d];
        scores.push_back(dot / std::sqrt(static_cast<double>(head_dim)));
        max_score = std::max(max_score, scores.back());
      }
      double denominator = std::exp(w.sinks[h] - max_score);
      for (double& s : scores) denominator += s = std::exp(s - max_score);
      for (size_t d = 0; d < head_dim; ++d) {
        double acc = 0;
        for (size_t j = 0; j <= t; ++j) acc += scores[j] * values[j][kv * head_dim + d];
        attention[h * head_dim + d] = acc / denominator;
      }
    }
    const Doubles projected = linear_double(attention, w.out, w.out_bias, hidden);
    for (size_t i = 0; i < hidden; ++i) x[i] += projected[i];
    const Doubles mlp_in = rms_norm_double(x, w.mlp_norm, c.rms_norm_eps);
    const Doubles router = linear_double(mlp_in, w.router, w.router_bias, c.num_experts);
    const std::vector<float> router_f32(router.begin(), router.end());
    const auto chosen = cpu::top_k_experts(router_f32, c.experts_per_token);
    Doubles gate_weights;
    double gate_sum = 0;
    for (uint32_t e : chosen) gate_sum += gate_weights.emplace_back(std::exp(router[e] - router[chosen[0]]));
    for (size_t s = 0; s < chosen.size(); ++s) {
      const size_t e = chosen[s];
      if (mlp1[e].empty()) {
        mlp1[e].resize(2 * inter * hidden);
        mlp2[e].resize(hidden * inter);
        w.mlp1.decode_rows(e, 0, 2 * inter, mlp1[e].data());
        w.mlp2.decode_rows(e, 0, hidden, mlp2[e].data());
      }
      const Doubles gate_up = linear_double(mlp_in, mlp1[e], w.mlp1_bias, 2 * inter, 0, e * 2 * inter);
      Doubles act(inter);
      for (size_t j = 0; j < inter; ++j) {
        const double gate = std::min(gate_up[2 * j], c.swiglu_limit);
        const double up = std::clamp(gate_up[2 * j + 1], -c.swiglu_limit, c.swiglu_limit);
        act[j] = (up + 1) * gate / (1 + std::exp(-1.702 * gate));
      }
      const Doubles down = linear_double(act, mlp2[e], w.mlp2_bias, hidden, 0, e * hidden);
      for (size_t i = 0; i < hidden; ++i) x[i] += gate_weights[s] / gate_sum * down[i];
    }
    outputs.push_back(std::move(x));
  }
  return outputs;
}

std::vector<float> layer_zero_output(auto& engine, const std::vector<uint32_t>& ids) {
  std::vector<float> output;
  engine.forward(ids, runtime::LogitRows::None, [&](const runtime::ActivationView& v) {
    if (v.stage == runtime::Stage::LayerOutput && v.layer == 0) output.assign(v.values.begin(), v.values.end());
  });
  return output;
}

TEST(VulkanWideLayer, ErrorAgainstDoubleIsTheCpuEnginesSize) {
  VULKAN_OR_SKIP();
  const auto model = wide_one_layer_model();
  const auto weights = cpu::decode_cpu_weights(model);
  const std::vector<uint32_t> ids = {1, 2, 3, 4, 5, 6};
  const auto reference = reference_layer_zero(weights, ids);
  cpu::CpuEngine cpu_engine(weights);
  vk::VulkanEngine vulkan_engine(model, {}, ctx);
  const auto cpu_out = layer_zero_output(cpu_engine, ids);
  const auto vulkan_out = layer_zero_output(vulkan_engine, ids);
  const size_t hidden = model.config.hidden_size;
  ASSERT_EQ(vulkan_out.size(), ids.size() * hidden);
  double cpu_error = 0, vulkan_error = 0, magnitude = 0;
  for (size_t t = 0; t < ids.size(); ++t)
    for (size_t i = 0; i < hidden; ++i) {
      const double ref = reference[t][i];
      magnitude = std::max(magnitude, std::abs(ref));
      cpu_error = std::max(cpu_error, std::abs(cpu_out[t * hidden + i] - ref));
      vulkan_error = std::max(vulkan_error, std::abs(vulkan_out[t * hidden + i] - ref));
    }
  std::printf("wide layer 0: max |ref| %.3e, cpu engine error %.3e, vulkan engine error %.3e\n", magnitude, cpu_error,
              vulkan_error);
  EXPECT_GT(magnitude, 10.0);  // large activations: the point of the test
  // The portable kernels sum in f32: an f32 sum's error over rows of 2880, 1.2e-5 of the largest
  // value on lavapipe. The CPU engine sums in double (fixed_order_products.h): only its f32 inputs
  // and outputs round, a third of that. The precise cooperative GEMMs (the default: A and Q8_0
  // weights as two f16 parts, partial sums promoted to f32 every 64 of depth and added with their
  // roundings kept) come within the same bound, and since each addition's rounding is carried into
  // the next step's sum (ec7df50) below the CPU engine's: 1.94e-3 against 4.31e-3 of a largest
  // value of 827 on an H100 (driver 580.159.04; vulkan_tests prints them). The split cooperative
  // GEMMs accumulate all of the depth with the tensor cores' truncation: up to about one f32 ulp
  // per step of depth, K * 2^-24 relative for K = 2880 (1.7e-4); 0.112 (1.2e-4 relative) on an
  // H100 (driver 580.159.04).
  EXPECT_LE(vulkan_error, 2e-5 * magnitude);
  if (vk::Kernels(*ctx).cooperative()) {  // the split GEMMs, for the record of what promotion removes
    runtime::EngineOptions split;
    split.vulkan.gemm_precision = runtime::VulkanTuning::GemmPrecision::Split;
    vk::VulkanEngine split_engine(model, split, ctx);
    const auto split_out = layer_zero_output(split_engine, ids);
    double split_error = 0;
    for (size_t t = 0; t < ids.size(); ++t)
      for (size_t i = 0; i < hidden; ++i) split_error = std::max(split_error, std::abs(split_out[t * hidden + i] - reference[t][i]));
    std::printf("wide layer 0 with the split cooperative GEMMs: error %.3e\n", split_error);
    const double depth = static_cast<double>(std::max(model.config.hidden_size, model.config.intermediate_size));
    EXPECT_LE(split_error, 2 * cpu_error + depth * std::ldexp(1.0, -24) * magnitude);
  }
}

}  // namespace
}  // namespace gptoss::test

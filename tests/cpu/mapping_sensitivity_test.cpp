// The two classic GPT-OSS mistakes, GQA kv head = h % kv_heads instead of h / (heads/kv_heads),
// and RoPE on adjacent pairs (2i, 2i+1) instead of the canonical half-split pairs (i, i + D/2),
// each change the output far beyond the parity tolerance. Each wrong variant is emulated
// exactly by permuting weights fed to the (correct) engine, and shown to fail the goldens that
// the engine passes; direct checks of the mapping and the rotation follow.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "convert/safetensors_model.h"
#include "runtime/cpu/cpu_engine.h"
#include "runtime/cpu/cpu_kernels.h"
#include "runtime/rope.h"
#include "tests/cpu/golden_refs.h"
#include "tests/test_support.h"

namespace gptoss::test {
namespace {

// Moves blocks of `block` floats: out block new_index[b] = in block b, in every one of `outer` groups.
std::vector<float> permute_blocks(const std::vector<float>& in, size_t outer, size_t blocks, size_t block,
                                  const std::vector<size_t>& new_index) {
  std::vector<float> out(in.size());
  for (size_t o = 0; o < outer; ++o)
    for (size_t b = 0; b < blocks; ++b)
      std::copy_n(in.data() + (o * blocks + b) * block, block, out.data() + (o * blocks + new_index[b]) * block);
  return out;
}

float logits_error(cpu::CpuWeights weights, const GoldenRefs& refs, const std::string& prompt) {
  cpu::CpuEngine engine(std::move(weights));
  const auto logits = engine.forward(refs.ids(prompt));
  const auto golden = refs.f32(prompt + ".logits_last");
  return max_abs_diff(logits.data(), golden.data(), golden.size());
}

cpu::CpuWeights preset_a_weights() { return cpu::decode_cpu_weights(load_safetensors_model(preset_a_checkpoint() / "hf")); }

TEST(CpuMappingSensitivity, ModuloGqaMappingFailsTheGoldens) {
  GOLDENS_OR_SKIP();
  GoldenRefs refs(*goldens);
  auto weights = preset_a_weights();
  const auto& c = weights.config;
  const size_t heads = c.num_heads, kv = c.num_kv_heads, group = c.heads_per_kv(), d = c.head_dim;
  ASSERT_GT(kv, 1u);
  // Query head h moves to slot (h % kv) * group + h / kv, so the engine's slot / group reads kv
  // head h % kv: exactly the wrong mapping on the original weights.
  std::vector<size_t> slot(heads);
  for (size_t h = 0; h < heads; ++h) slot[h] = (h % kv) * group + h / kv;
  for (auto& layer : weights.layers) {
    layer.q = permute_blocks(layer.q, 1, heads, d * c.hidden_size, slot);
    layer.q_bias = permute_blocks(layer.q_bias, 1, heads, d, slot);
    layer.sinks = permute_blocks(layer.sinks, 1, heads, 1, slot);
    layer.out = permute_blocks(layer.out, c.hidden_size, heads, d, slot);  // columns of Wo follow their head
  }
  const float error = logits_error(std::move(weights), refs, "long");
  EXPECT_GT(error, 1e-2f) << "the goldens would not catch h % kv_heads";
  std::printf("h %% kv mapping: logits_last off by %.3f\n", static_cast<double>(error));
}

TEST(CpuMappingSensitivity, AdjacentRopePairsFailTheGoldens) {
  GOLDENS_OR_SKIP();
  GoldenRefs refs(*goldens);
  auto weights = preset_a_weights();
  const auto& c = weights.config;
  const size_t d = c.head_dim, half = d / 2;
  // Half-split rotation of rows reordered as [0, 2, 4, ..., 1, 3, 5, ...] is adjacent-pair
  // rotation of the original rows; q·k is unchanged by applying the same order to Q and K.
  std::vector<size_t> row(d);
  for (size_t i = 0; i < half; ++i) {
    row[2 * i] = i;
    row[2 * i + 1] = i + half;
  }
  for (auto& layer : weights.layers) {
    layer.q = permute_blocks(layer.q, c.num_heads, d, c.hidden_size, row);
    layer.q_bias = permute_blocks(layer.q_bias, c.num_heads, d, 1, row);
    layer.k = permute_blocks(layer.k, c.num_kv_heads, d, c.hidden_size, row);
    layer.k_bias = permute_blocks(layer.k_bias, c.num_kv_heads, d, 1, row);
  }
  const float error = logits_error(std::move(weights), refs, "long");
  EXPECT_GT(error, 1e-2f) << "the goldens would not catch adjacent RoPE pairs";
  std::printf("adjacent RoPE pairs: logits_last off by %.3f\n", static_cast<double>(error));
}

TEST(CpuMappingSensitivity, UnpermutedWeightsPassTheSameCheck) {
  GOLDENS_OR_SKIP();
  GoldenRefs refs(*goldens);
  EXPECT_LE(logits_error(preset_a_weights(), refs, "long"), 1e-3f);
}

TEST(CpuKernels, GqaMapsEachGroupOfQueryHeadsToOneKvHead) {
  GptOssConfig c;
  c.num_heads = 16;
  c.num_kv_heads = 2;
  for (uint32_t h = 0; h < 8; ++h) EXPECT_EQ(c.kv_head_for(h), 0u);
  for (uint32_t h = 8; h < 16; ++h) EXPECT_EQ(c.kv_head_for(h), 1u);
}

TEST(CpuKernels, RopeRotatesHalfSplitPairs) {
  // D = 4: element 0 pairs with 2 and 1 with 3.
  float x[4] = {1, 2, 3, 4};
  const float cos_table[2] = {0.5f, 0.25f}, sin_table[2] = {2.0f, 3.0f};
  cpu::apply_rope_half_split(x, 1, 4, cos_table, sin_table);
  EXPECT_FLOAT_EQ(x[0], 1 * 0.5f - 3 * 2.0f);
  EXPECT_FLOAT_EQ(x[1], 2 * 0.25f - 4 * 3.0f);
  EXPECT_FLOAT_EQ(x[2], 3 * 0.5f + 1 * 2.0f);
  EXPECT_FLOAT_EQ(x[3], 4 * 0.25f + 2 * 3.0f);
}

TEST(CpuKernels, RopeTableAppliesConcentrationToCosAndSin) {
  const float inv_freq[2] = {1.0f, 0.5f};
  float cos_table[2], sin_table[2];
  runtime::rope_table(3, inv_freq, 2.0f, cos_table, sin_table);
  EXPECT_FLOAT_EQ(cos_table[0], 2.0f * std::cos(3.0f));
  EXPECT_FLOAT_EQ(sin_table[1], 2.0f * std::sin(1.5f));
}

TEST(CpuKernels, RouterTopKBreaksTiesTowardsTheLowestIndexAndSoftmaxesOnlyTheK) {
  const float logits[6] = {1.0f, 3.0f, 2.0f, 3.0f, 2.0f, -1.0f};
  const auto chosen = cpu::top_k_experts(logits, 4);
  EXPECT_EQ(chosen, (std::vector<uint32_t>{1, 3, 2, 4}));
  const auto weights = cpu::softmax_of(logits, chosen);
  const double z = 2 * std::exp(3.0) + 2 * std::exp(2.0);
  EXPECT_NEAR(weights[0], std::exp(3.0) / z, 1e-6);
  EXPECT_NEAR(weights[2], std::exp(2.0) / z, 1e-6);
}

// The router's logits come from the residual stream itself: W . (x * norm) in double (x * norm
// exact), times 1/rms, plus the bias, rounded to f32 once. Here each is the correctly rounded f32 of
// the same value in long double, and a token's logits are the same bits alone or beside others.
TEST(CpuKernels, RouterLogitsAreTheResidualsDotRoundedOnceWhateverTheBatch) {
  const size_t hidden = 2880, experts = 32, rows = 3;
  const double eps = 1e-5;
  std::mt19937 generator(20261128);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(rows * hidden), norm(hidden), w(experts * hidden), bias(experts);
  for (float& v : x) v = 4.0f * normal(generator);
  for (float& v : norm) v = 1.0f + 0.25f * normal(generator);
  for (float& v : w) v = 0.02f * normal(generator);
  for (float& v : bias) v = 0.1f * normal(generator);
  std::vector<float> logits(rows * experts);
  const std::vector<double> w_wide(w.begin(), w.end());  // as the f32 engine holds them
  cpu::router_logits(x.data(), rows, hidden, norm.data(), eps, w_wide.data(), experts, bias.data(), logits.data());
  for (size_t r = 0; r < rows; ++r) {
    long double squares = 0;
    for (size_t i = 0; i < hidden; ++i) squares += static_cast<long double>(x[r * hidden + i]) * x[r * hidden + i];
    const long double factor = 1.0L / std::sqrt(squares / hidden + eps);
    std::vector<float> alone(experts);
    cpu::router_logits(x.data() + r * hidden, 1, hidden, norm.data(), eps, w_wide.data(), experts, bias.data(), alone.data());
    for (size_t e = 0; e < experts; ++e) {
      long double sum = 0;
      for (size_t i = 0; i < hidden; ++i)
        sum += static_cast<long double>(w[e * hidden + i]) * x[r * hidden + i] * norm[i];
      EXPECT_EQ(logits[r * experts + e], static_cast<float>(sum * factor + bias[e])) << "token " << r << " expert " << e;
      EXPECT_EQ(alone[e], logits[r * experts + e]) << "token " << r << " alone, expert " << e;
    }
  }
}

TEST(CpuKernels, SwigluClampsGateAboveAndUpBothWays) {
  // (gate, up) pairs interleaved: gate 10 clamps to 7, up -9 clamps to -7; gate -10 is kept.
  const float gate_up[6] = {10.0f, -9.0f, -10.0f, 9.0f, 1.0f, 0.5f};
  float act[3];
  cpu::swiglu_interleaved(gate_up, 3, 7.0f, act);
  auto glu = [](double g) { return g / (1 + std::exp(-1.702 * g)); };
  EXPECT_NEAR(act[0], (-7 + 1) * glu(7), 1e-5);
  EXPECT_NEAR(act[1], (7 + 1) * glu(-10), 1e-6);
  EXPECT_NEAR(act[2], (0.5 + 1) * glu(1), 1e-6);
}

TEST(CpuKernels, RmsNormUsesEpsAndWeight) {
  const float x[2] = {3.0f, 4.0f}, weight[2] = {1.0f, 2.0f};
  float y[2];
  cpu::rms_norm(x, 1, 2, weight, 0.5, y);
  const double inv = 1 / std::sqrt(12.5 + 0.5);
  EXPECT_NEAR(y[0], 3 * inv, 1e-6);
  EXPECT_NEAR(y[1], 8 * inv, 1e-6);
}

}  // namespace
}  // namespace gptoss::test

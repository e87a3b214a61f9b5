// Every kernel of the Vulkan engine against a CPU computation on random data: dense matvec in
// each stored encoding (tails, bias, batching, accumulation, >65535 workgroups), embedding gather,
// RMSNorm, RoPE with the CPU engine's pairing and tables, attention with window and sinks,
// router top-k with ties, and the MXFP4 expert kernels over all 16 codes and a spread of scales.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <numeric>

#include "convert/synthesize.h"
#include "formats/codecs/float_codec.h"
#include "formats/codecs/mxfp4.h"
#include "runtime/cpu/cpu_kernels.h"
#include "runtime/vulkan/vulkan_kernels.h"
#include "tests/vulkan/vulkan_test_support.h"

namespace gptoss::test {
namespace {

using vk::Buffer;

template <class Push>
void run(const vk::Context& ctx, const vk::Pipeline& pipeline, std::initializer_list<const Buffer*> buffers,
         const Push& push, uint32_t gx, uint32_t gy = 1) {
  const std::vector<const Buffer*> list(buffers);
  ctx.dispatch_once(pipeline, list, &push, sizeof(Push), gx, gy);
}

std::vector<uint8_t> encode(DType type, const std::vector<float>& values) {
  const auto bytes = dtype_byte_size(type, values.size());
  std::vector<uint8_t> out(*bytes);
  encode_from_f32(type, values.data(), values.size(), out.data());
  return out;
}

std::vector<float> decode(DType type, const std::vector<uint8_t>& bytes, size_t count) {
  std::vector<float> out(count);
  decode_to_f32(type, bytes.data(), count, out.data());
  return out;
}

const vk::Kernels& kernels(const vk::Context& ctx) {
  static const vk::Kernels k(ctx);
  return k;
}

struct MatvecCase {
  DType weight_type;
  uint32_t rows, cols, vectors;
  bool accumulate;
  uint32_t lanes = 0;  // 0: what the engine picks
  uint32_t max_groups_x = 65535;
};

void check_matvec(const vk::Context& ctx, const MatvecCase& m) {
  SCOPED_TRACE(std::string(dtype_name(m.weight_type)) + " " + std::to_string(m.rows) + "x" + std::to_string(m.cols) +
               " vectors " + std::to_string(m.vectors));
  const auto weight_bytes = encode(m.weight_type, random_floats(size_t{m.rows} * m.cols, 1));
  const auto weight = decode(m.weight_type, weight_bytes, size_t{m.rows} * m.cols);
  const auto bias_bytes = encode(DType::BF16, random_floats(m.rows, 2));
  const auto bias = decode(DType::BF16, bias_bytes, m.rows);
  const auto x = random_floats(size_t{m.vectors} * m.cols, 3);
  const auto y_initial = random_floats(size_t{m.vectors} * m.rows, 4);
  auto w_buf = host_buffer(ctx, weight_bytes), b_buf = host_buffer(ctx, bias_bytes), x_buf = host_buffer(ctx, x);
  auto y_buf = host_buffer(ctx, y_initial);
  const vk::MatvecPush push{m.rows, m.cols, static_cast<uint32_t>(*vk::dense_encoding(m.weight_type)),
                            static_cast<uint32_t>(vk::DenseEncoding::BF16), 1, m.accumulate ? 1u : 0u, m.vectors,
                            m.lanes ? m.lanes : vk::matvec_lanes(m.cols)};
  const auto groups = vk::matvec_groups(m.rows, push.lanes, m.max_groups_x);
  run(ctx, kernels(ctx).matvec, {w_buf.get(), b_buf.get(), x_buf.get(), y_buf.get()}, push, groups[0], groups[1]);
  const auto y = read_buffer<float>(*y_buf, size_t{m.vectors} * m.rows);
  double worst = 0;
  for (uint32_t v = 0; v < m.vectors; ++v)
    for (uint32_t r = 0; r < m.rows; ++r) {
      double expected = bias[r];
      for (uint32_t k = 0; k < m.cols; ++k) expected += double{weight[size_t{r} * m.cols + k]} * x[size_t{v} * m.cols + k];
      if (m.accumulate) expected += y_initial[size_t{v} * m.rows + r];
      worst = std::max(worst, std::abs(expected - y[size_t{v} * m.rows + r]));
    }
  EXPECT_LE(worst, 2e-5 * std::sqrt(static_cast<double>(m.cols)));
}

TEST(VulkanKernels, DenseMatvecEveryEncoding) {
  VULKAN_OR_SKIP();
  check_matvec(*ctx, {DType::F32, 37, 70, 1, false});
  check_matvec(*ctx, {DType::F16, 37, 70, 2, false});
  check_matvec(*ctx, {DType::BF16, 37, 70, 1, true});
  check_matvec(*ctx, {DType::BF16, 64, 2880, 1, false});
  check_matvec(*ctx, {DType::Q8_0, 37, 96, 1, false});
  check_matvec(*ctx, {DType::Q8_0, 20, 2880, 3, true});
}

TEST(VulkanKernels, BatchedMatvecEightVectors) {
  VULKAN_OR_SKIP();
  check_matvec(*ctx, {DType::Q8_0, 13, 64, 8, false});
  check_matvec(*ctx, {DType::BF16, 13, 40, 5, true});
}

TEST(VulkanKernels, MatvecSplitsWorkgroupsOverY) {
  VULKAN_OR_SKIP();
  // With 64 lanes a workgroup holds one row: 65,537 rows need 65,537 workgroups, split over y.
  EXPECT_EQ(vk::matvec_groups(65537, 64), (std::array<uint32_t, 2>{65535, 2}));
  EXPECT_EQ(vk::matvec_groups(201088, 1), (std::array<uint32_t, 2>{3142, 1}));
  // The same split on a small case (x limited to 7 groups): rows past the end in the last y row.
  check_matvec(*ctx, {DType::BF16, 1000, 32, 1, false, 1, 7});
  check_matvec(*ctx, {DType::F16, 75, 64, 1, false, 64, 8});
  // Every lane count the shader supports gives the same products.
  for (uint32_t lanes : {1u, 2u, 8u, 32u}) check_matvec(*ctx, {DType::Q8_0, 70, 320, 2, false, lanes});
}

TEST(VulkanKernels, EmbeddingGatherDecodesTheStoredRow) {
  VULKAN_OR_SKIP();
  for (DType type : {DType::BF16, DType::Q8_0, DType::F16, DType::F32}) {
    SCOPED_TRACE(dtype_name(type));
    const uint32_t vocab = 50, hidden = 96, token = 37;
    const auto table_bytes = encode(type, random_floats(size_t{vocab} * hidden, 5));
    const auto table = decode(type, table_bytes, size_t{vocab} * hidden);
    auto table_buf = host_buffer(*ctx, table_bytes);
    auto step = host_buffer(*ctx, std::vector<uint32_t>{token, 0});
    auto x = host_buffer(*ctx, std::vector<float>(hidden));
    run(*ctx, kernels(*ctx).embed, {table_buf.get(), step.get(), x.get()},
        vk::EmbedPush{static_cast<uint32_t>(*vk::dense_encoding(type)), hidden}, 2);
    const auto got = read_buffer<float>(*x, hidden);
    for (uint32_t d = 0; d < hidden; ++d) ASSERT_EQ(got[d], table[size_t{token} * hidden + d]) << d;
  }
}

TEST(VulkanKernels, RmsNormMatchesTheCpuEngine) {
  VULKAN_OR_SKIP();
  const uint32_t dim = 200, rows = 3;
  const auto x = random_floats(size_t{dim} * rows, 6, 3.0f);
  const auto weight_bytes = encode(DType::BF16, random_floats(dim, 7));
  const auto weight = decode(DType::BF16, weight_bytes, dim);
  std::vector<float> expected(x.size());
  cpu::rms_norm(x.data(), rows, dim, weight.data(), 1e-5, expected.data());
  auto x_buf = host_buffer(*ctx, x), w_buf = host_buffer(*ctx, weight_bytes), y_buf = host_buffer(*ctx, expected);
  run(*ctx, kernels(*ctx).rmsnorm, {x_buf.get(), w_buf.get(), y_buf.get()},
      vk::RmsNormPush{dim, static_cast<uint32_t>(vk::DenseEncoding::BF16), 1e-5f}, rows);
  const auto y = read_buffer<float>(*y_buf, x.size());
  for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], expected[i], 1e-5f * (1 + std::abs(expected[i]))) << i;
}

TEST(VulkanKernels, RopeUsesTheCpuPairingAndStoresKvAtThePosition) {
  VULKAN_OR_SKIP();
  const auto config = synth_config(synth_preset("a"));
  const auto yarn = compute_yarn(config);
  // One kv head keeps the cache small enough for positions up to the 131072 of gpt-oss, where
  // the angles reach 131072 rad and sin/cos need an exact range reduction.
  const uint32_t heads = 4, kv_heads = 1, head_dim = config.head_dim, capacity = 131072;
  const uint32_t kv_rows = kv_heads * head_dim;
  ASSERT_EQ(yarn.inv_freq.size(), head_dim / 2);
  auto k_cache = host_buffer(*ctx, std::vector<float>(size_t{capacity} * kv_rows));
  auto v_cache = host_buffer(*ctx, std::vector<float>(size_t{capacity} * kv_rows));
  auto inv_freq = host_buffer(*ctx, yarn.inv_freq);
  for (uint32_t position : {0u, 1u, 7u, 29u, 4095u, 65537u, 131071u}) {
    SCOPED_TRACE("position " + std::to_string(position));
    const auto q = random_floats(size_t{heads} * head_dim, 8 + position);
    const auto k = random_floats(kv_rows, 9 + position);
    const auto v = random_floats(kv_rows, 10 + position);
    auto q_buf = host_buffer(*ctx, q), k_buf = host_buffer(*ctx, k), v_buf = host_buffer(*ctx, v);
    auto step = host_buffer(*ctx, std::vector<uint32_t>{0, position});
    run(*ctx, kernels(*ctx).rope_store,
        {q_buf.get(), k_buf.get(), v_buf.get(), k_cache.get(), v_cache.get(), inv_freq.get(), step.get()},
        vk::RopeStorePush{heads, kv_heads, head_dim, static_cast<float>(yarn.concentration)},
        vk::rope_store_groups(heads, kv_heads, head_dim));
    std::vector<float> cos_table(head_dim / 2), sin_table(head_dim / 2);
    cpu::rope_table(position, yarn.inv_freq, static_cast<float>(yarn.concentration), cos_table.data(),
                    sin_table.data());
    auto q_expected = q, k_expected = k;
    cpu::apply_rope_half_split(q_expected.data(), heads, head_dim, cos_table.data(), sin_table.data());
    cpu::apply_rope_half_split(k_expected.data(), kv_heads, head_dim, cos_table.data(), sin_table.data());
    const auto q_got = read_buffer<float>(*q_buf, q.size());
    const auto* k_all = static_cast<const float*>(k_cache->mapped());
    const auto* v_all = static_cast<const float*>(v_cache->mapped());
    for (size_t i = 0; i < q.size(); ++i) ASSERT_NEAR(q_got[i], q_expected[i], 5e-6f) << i;
    for (size_t i = 0; i < kv_rows; ++i) {
      ASSERT_NEAR(k_all[size_t{position} * kv_rows + i], k_expected[i], 5e-6f) << i;
      ASSERT_EQ(v_all[size_t{position} * kv_rows + i], v[i]) << i;
    }
  }
  // Nothing but the written positions' slots was touched.
  const auto* k_all = static_cast<const float*>(k_cache->mapped());
  const auto nonzero = std::count_if(k_all, k_all + size_t{capacity} * kv_rows, [](float f) { return f != 0.0f; });
  EXPECT_LE(static_cast<size_t>(nonzero), size_t{7} * kv_rows);
}

// Naive reference of one query position over the cache, in double.
std::vector<float> reference_attention(const std::vector<float>& q, const std::vector<float>& k_cache,
                                       const std::vector<float>& v_cache, const std::vector<float>& sinks,
                                       uint32_t heads, uint32_t kv_heads, uint32_t head_dim, uint32_t position,
                                       uint32_t window) {
  const uint32_t kv_rows = kv_heads * head_dim;
  const uint32_t first = window && position + 1 > window ? position + 1 - window : 0;
  std::vector<float> out(size_t{heads} * head_dim);
  for (uint32_t h = 0; h < heads; ++h) {
    const uint32_t kv = h / (heads / kv_heads);
    std::vector<double> scores;
    double max_score = sinks[h];
    for (uint32_t j = first; j <= position; ++j) {
      double dot = 0;
      for (uint32_t d = 0; d < head_dim; ++d)
        dot += double{q[size_t{h} * head_dim + d]} * k_cache[size_t{j} * kv_rows + kv * head_dim + d];
      scores.push_back(dot / std::sqrt(static_cast<double>(head_dim)));
      max_score = std::max(max_score, scores.back());
    }
    double denominator = std::exp(sinks[h] - max_score);
    for (double& s : scores) denominator += s = std::exp(s - max_score);
    for (uint32_t d = 0; d < head_dim; ++d) {
      double acc = 0;
      for (uint32_t j = first; j <= position; ++j)
        acc += scores[j - first] * v_cache[size_t{j} * kv_rows + kv * head_dim + d];
      out[size_t{h} * head_dim + d] = static_cast<float>(acc / denominator);
    }
  }
  return out;
}

TEST(VulkanKernels, AttentionWithWindowSinksAndGqa) {
  VULKAN_OR_SKIP();
  const uint32_t heads = 8, kv_heads = 2, head_dim = 64, capacity = 150, kv_rows = kv_heads * head_dim;
  const auto k_cache = random_floats(size_t{capacity} * kv_rows, 11, 2.0f);
  const auto v_cache = random_floats(size_t{capacity} * kv_rows, 12);
  const auto q = random_floats(size_t{heads} * head_dim, 13, 2.0f);
  auto sinks = random_floats(heads, 14, 2.0f);
  sinks[3] = 30.0f;  // a sink that dominates the softmax
  auto q_buf = host_buffer(*ctx, q), k_buf = host_buffer(*ctx, k_cache), v_buf = host_buffer(*ctx, v_cache);
  auto sink_buf = host_buffer(*ctx, sinks);
  auto scores = host_buffer(*ctx, std::vector<float>(size_t{heads} * capacity));
  for (uint32_t window : {0u, 8u}) {
    for (uint32_t position : {0u, 5u, 7u, 8u, 9u, 70u, 149u}) {
      SCOPED_TRACE("window " + std::to_string(window) + " position " + std::to_string(position));
      auto out = host_buffer(*ctx, std::vector<float>(size_t{heads} * head_dim));
      auto step = host_buffer(*ctx, std::vector<uint32_t>{0, position});
      run(*ctx, kernels(*ctx).attention,
          {q_buf.get(), k_buf.get(), v_buf.get(), sink_buf.get(), scores.get(), out.get(), step.get()},
          vk::AttentionPush{heads, kv_heads, head_dim, window, static_cast<uint32_t>(vk::DenseEncoding::F32),
                            1.0f / std::sqrt(static_cast<float>(head_dim)), capacity},
          heads);
      const auto got = read_buffer<float>(*out, size_t{heads} * head_dim);
      const auto expected = reference_attention(q, k_cache, v_cache, sinks, heads, kv_heads, head_dim, position, window);
      for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], expected[i], 2e-5f) << i;
    }
  }
}

TEST(VulkanKernels, RouterTopKBreaksTiesTowardsTheLowestIndex) {
  VULKAN_OR_SKIP();
  const std::vector<std::vector<float>> cases = {
      {1, 3, 3, 2, 3, 0, 2, 1},
      {0, 0, 0, 0, 0, 0, 0, 0},
      {-1, 5, -2, 5, 4, 4, 4, 5},
      random_floats(32, 15, 4.0f),
      random_floats(300, 23, 4.0f),  // more experts than the kernel's 256 invocations
  };
  for (const auto& logits : cases) {
    for (uint32_t k : {1u, 4u}) {
      const auto expected = cpu::top_k_experts(logits, k);
      const auto expected_weights = cpu::softmax_of(logits, expected);
      auto l_buf = host_buffer(*ctx, logits);
      auto chosen = host_buffer(*ctx, std::vector<uint32_t>(k, 999));
      auto weights = host_buffer(*ctx, std::vector<float>(k));
      run(*ctx, kernels(*ctx).router_topk, {l_buf.get(), chosen.get(), weights.get()},
          vk::RouterTopkPush{static_cast<uint32_t>(logits.size()), k}, 1);
      EXPECT_EQ(read_buffer<uint32_t>(*chosen, k), expected);
      const auto got = read_buffer<float>(*weights, k);
      for (uint32_t i = 0; i < k; ++i) EXPECT_NEAR(got[i], expected_weights[i], 1e-6f);
    }
  }
}

// MXFP4 experts [experts, rows, cols/32 blocks]: every byte value appears (so all 16 codes in
// both nibbles), scales spread over 2^-27 .. 2^8.
struct Mxfp4Experts {
  std::vector<uint8_t> blocks, scales;
  std::vector<float> values;  // dequantized, [experts, rows, cols]
};

Mxfp4Experts make_experts(uint32_t experts, uint32_t rows, uint32_t cols, uint32_t seed, uint8_t scale_low,
                          uint8_t scale_high) {
  Mxfp4Experts m;
  const size_t block_count = size_t{experts} * rows * (cols / 32);
  m.blocks.resize(block_count * 16);
  m.scales.resize(block_count);
  std::mt19937 rng(seed);
  for (size_t i = 0; i < m.blocks.size(); ++i) m.blocks[i] = static_cast<uint8_t>((i * 37 + rng()) & 0xFF);
  for (size_t i = 0; i < 256 && i < m.blocks.size(); ++i) m.blocks[i] = static_cast<uint8_t>(i);
  for (size_t i = 0; i < m.scales.size(); ++i)
    m.scales[i] = static_cast<uint8_t>(scale_low + (i * 7 + rng() % 3) % (scale_high - scale_low + 1));
  m.values.resize(block_count * 32);
  mxfp4::dequantize_oai(m.blocks.data(), m.scales.data(), block_count, m.values.data());
  return m;
}

// k = 3 and k = 6 (more than the four experts gpt-oss picks).
void check_expert_down_projection(const vk::Context& ctx, const std::vector<uint32_t>& chosen,
                                  const std::vector<float>& weights) {
  const uint32_t experts = 9, hidden = 24, inter = 96, k = static_cast<uint32_t>(chosen.size());
  const auto w2 = make_experts(experts, hidden, inter, 16, 100, 135);
  const auto bias_bytes = encode(DType::BF16, random_floats(size_t{experts} * hidden, 17));
  const auto bias = decode(DType::BF16, bias_bytes, size_t{experts} * hidden);
  const auto act = random_floats(size_t{k} * inter, 18);
  const auto residual = random_floats(hidden, 19);
  auto blocks = host_buffer(ctx, w2.blocks), scales = host_buffer(ctx, w2.scales);
  auto b_buf = host_buffer(ctx, bias_bytes), act_buf = host_buffer(ctx, act);
  auto chosen_buf = host_buffer(ctx, chosen), weight_buf = host_buffer(ctx, weights);
  auto residual_buf = host_buffer(ctx, residual);
  run(ctx, kernels(ctx).expert_mlp2,
      {blocks.get(), scales.get(), b_buf.get(), act_buf.get(), chosen_buf.get(), weight_buf.get(), residual_buf.get()},
      vk::ExpertMlp2Push{hidden, inter, static_cast<uint32_t>(vk::DenseEncoding::BF16), k}, vk::expert_mlp2_groups(hidden));
  const auto got = read_buffer<float>(*residual_buf, hidden);
  for (uint32_t d = 0; d < hidden; ++d) {
    double expected = residual[d], magnitude = std::abs(residual[d]);
    for (uint32_t s = 0; s < k; ++s) {
      const uint32_t e = chosen[s];
      double dot = bias[size_t{e} * hidden + d];
      for (uint32_t i = 0; i < inter; ++i) {
        const double term = double{w2.values[(size_t{e} * hidden + d) * inter + i]} * act[size_t{s} * inter + i];
        dot += term;
        magnitude += std::abs(term) * weights[s];
      }
      expected += weights[s] * dot;
    }
    ASSERT_NEAR(got[d], expected, 1e-6 * magnitude + 1e-6) << d;
  }
}

TEST(VulkanKernels, ExpertDownProjectionReadsMxfp4AndAccumulatesWeighted) {
  VULKAN_OR_SKIP();
  check_expert_down_projection(*ctx, {4, 0, 2}, {0.5f, 0.3f, 0.2f});
  check_expert_down_projection(*ctx, {8, 1, 5, 0, 3, 7}, {0.3f, 0.2f, 0.15f, 0.15f, 0.1f, 0.1f});
}

TEST(VulkanKernels, ExpertGateUpProjectionWithSwiglu) {
  VULKAN_OR_SKIP();
  const uint32_t experts = 4, hidden = 64, inter = 40, k = 2;
  const float limit = 7.0f;
  // Scales around 2^0 make |gate| and |up| exceed the limit for some rows.
  const auto w1 = make_experts(experts, 2 * inter, hidden, 20, 126, 131);
  const auto bias_bytes = encode(DType::F32, random_floats(size_t{experts} * 2 * inter, 21));
  const auto x = random_floats(hidden, 22);
  const std::vector<uint32_t> chosen = {3, 1};
  auto blocks = host_buffer(*ctx, w1.blocks), scales = host_buffer(*ctx, w1.scales);
  auto b_buf = host_buffer(*ctx, bias_bytes), x_buf = host_buffer(*ctx, x), chosen_buf = host_buffer(*ctx, chosen);
  auto act = host_buffer(*ctx, std::vector<float>(size_t{k} * inter));
  run(*ctx, kernels(*ctx).expert_mlp1, {blocks.get(), scales.get(), b_buf.get(), x_buf.get(), chosen_buf.get(), act.get()},
      vk::ExpertMlp1Push{hidden, inter, static_cast<uint32_t>(vk::DenseEncoding::F32), limit},
      vk::expert_mlp1_groups(inter, k)[0], k);
  const auto got = read_buffer<float>(*act, size_t{k} * inter);
  const auto bias = decode(DType::F32, bias_bytes, size_t{experts} * 2 * inter);
  size_t clamped = 0;
  for (uint32_t s = 0; s < k; ++s) {
    std::vector<float> gate_up(2 * inter), expected(inter);
    for (uint32_t r = 0; r < 2 * inter; ++r) {
      const size_t row = size_t{chosen[s]} * 2 * inter + r;
      double dot = bias[row];
      for (uint32_t i = 0; i < hidden; ++i) dot += double{w1.values[row * hidden + i]} * x[i];
      gate_up[r] = static_cast<float>(dot);
      if (std::abs(dot) > limit) ++clamped;
    }
    cpu::swiglu_interleaved(gate_up.data(), inter, limit, expected.data());
    for (uint32_t j = 0; j < inter; ++j)
      ASSERT_NEAR(got[size_t{s} * inter + j], expected[j], 1e-5f * (1 + std::abs(expected[j]))) << s << " " << j;
  }
  EXPECT_GT(clamped, 0u) << "the data should exercise the SwiGLU clamps";
}

}  // namespace
}  // namespace gptoss::test

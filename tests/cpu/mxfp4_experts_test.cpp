// The engine keeps the experts in MXFP4 and decodes one expert just before its GEMMs. Decoding is
// exact (every MXFP4 value is an f32), so the engine must compute bit for bit what it computes on
// every expert decoded at load (predecode_experts, through mxfp4::dequantize_oai): checked here for
// the decoder itself (every scale byte, every code, row slices, f32 and f64), and for every stage
// and the logits of both arithmetics on preset a and on a wider synthesized model, whose experts
// are large enough to be decoded on several threads. The embedding stays stored too (DenseRows:
// one row decoded per token), and the f64 engine's weights decoded straight to double are the f32
// ones widened, bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "convert/model_io.h"
#include "convert/synthesize.h"
#include "formats/codecs/float_codec.h"
#include "formats/codecs/mxfp4.h"
#include "formats/core/error.h"
#include "formats/core/tensor_source.h"
#include "runtime/cpu/cpu_engine.h"
#include "tests/test_support.h"

namespace gptoss::test {
namespace {

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

CanonicalTensor u8_tensor(const std::string& name, std::vector<uint64_t> shape, std::vector<uint8_t> bytes) {
  return {{TensorRole::Mlp1Blocks, 0, name, std::move(shape)}, DType::U8, owned_bytes(std::move(bytes)), "test:" + name};
}

// 2 experts of 256 rows of 64 columns: every scale byte (0 and 1 subnormal, 255 infinite) meets
// every code in each expert.
struct HandMadeExperts {
  static constexpr uint64_t kExperts = 2, kRows = 256, kBlocks = 2;
  CanonicalTensor blocks, scales;
  HandMadeExperts() {
    std::vector<uint8_t> block_bytes(kExperts * kRows * kBlocks * 16), scale_bytes(kExperts * kRows * kBlocks);
    for (size_t i = 0; i < block_bytes.size(); ++i) block_bytes[i] = static_cast<uint8_t>(i * 7 + i / 256);
    for (size_t i = 0; i < scale_bytes.size(); ++i) scale_bytes[i] = static_cast<uint8_t>(i / kBlocks + 37 * (i % kBlocks));
    blocks = u8_tensor("blocks", {kExperts, kRows, kBlocks, 16}, std::move(block_bytes));
    scales = u8_tensor("scales", {kExperts, kRows, kBlocks}, std::move(scale_bytes));
  }
};

TEST(CpuMxfp4Experts, DecodedRowsAreDequantizeOaiBitForBit) {
  const HandMadeExperts m;
  const cpu::Mxfp4Experts experts(m.blocks, m.scales);
  ASSERT_EQ(experts.experts(), 2u);
  ASSERT_EQ(experts.rows(), 256u);
  ASSERT_EQ(experts.columns(), 64u);
  const auto reference = cpu::decode_mxfp4_experts(m.blocks, m.scales);  // dequantize_oai, all at once
  EXPECT_TRUE(same_bits(experts.decode_all(), reference));
  const size_t per_expert = 256 * 64;
  for (uint64_t e = 0; e < 2; ++e)
    for (auto [first, count] : {std::pair<uint64_t, uint64_t>{0, 256}, {5, 13}, {255, 1}}) {
      SCOPED_TRACE("expert " + std::to_string(e) + ", rows " + std::to_string(first) + "+" + std::to_string(count));
      const auto begin = reference.begin() + static_cast<std::ptrdiff_t>(e * per_expert + first * 64);
      const std::vector<float> want(begin, begin + static_cast<std::ptrdiff_t>(count * 64));
      std::vector<float> got(count * 64);
      experts.decode_rows(e, first, count, got.data());
      EXPECT_TRUE(same_bits(got, want));
      std::vector<double> wide(count * 64);
      experts.decode_rows(e, first, count, wide.data());
      EXPECT_TRUE(same_bits(wide, std::vector<double>(want.begin(), want.end())));
    }
  size_t infinite = 0, subnormal = 0;
  for (float v : reference) {
    infinite += std::isinf(v);
    subnormal += std::fpclassify(v) == FP_SUBNORMAL;
  }
  EXPECT_GT(infinite, 0u);  // the scale bytes' extremes were reached
  EXPECT_GT(subnormal, 0u);
}

TEST(CpuMxfp4Experts, RejectsBlocksAndScalesThatDisagree) {
  const HandMadeExperts m;
  auto scales = m.scales;
  scales.spec.shape = {2, 128, 4};  // as many bytes, another shape
  try {
    cpu::Mxfp4Experts experts(m.blocks, scales);
    FAIL() << "accepted";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("[2, 256, 2, 16] and [2, 128, 4]"), std::string::npos) << e.what();
  }
}

TEST(CpuMxfp4Experts, MappedExpertsAreViewsGeneratedOnesOneCopy) {
  const auto mapped = load_model(preset_a_checkpoint() / "hf");
  const auto generated = synthesize_model(synth_preset("a"));
  const auto from_file = cpu::decode_cpu_weights(mapped);
  const auto from_synth = cpu::decode_cpu_weights(generated);
  for (int l = 0; l < 4; ++l) {
    const auto& blocks = mapped.get(TensorRole::Mlp2Blocks, l);
    ASSERT_TRUE(blocks.source->contiguous());
    EXPECT_EQ(from_file.layers[l].mlp2.blocks().data(), blocks.source->contiguous()->data());  // no copy
    const auto& synth_blocks = generated.get(TensorRole::Mlp2Blocks, l);
    ASSERT_FALSE(synth_blocks.source->contiguous());
    const auto bytes = read_all(*synth_blocks.source);
    const auto held = from_synth.layers[l].mlp2.blocks();
    EXPECT_TRUE(held.size() == bytes.size() && std::memcmp(held.data(), bytes.data(), bytes.size()) == 0);
  }
}

// Every stage the observer sees, then the logits.
std::vector<std::vector<float>> run(cpu::CpuEngine& engine, const std::vector<uint32_t>& ids) {
  std::vector<std::vector<float>> out;
  engine.reset();
  // A prefill, then a decode step (one row: the GEMV path of every linear).
  for (auto part : {std::span(ids).first(ids.size() - 1), std::span(ids).last(1)}) {
    auto logits = engine.forward(part, runtime::LogitRows::All, [&](const runtime::ActivationView& v) {
      out.emplace_back(v.values.begin(), v.values.end());
    });
    out.push_back(std::move(logits));
  }
  return out;
}

void expect_identical_to_predecoded(const CanonicalModel& model, const std::vector<uint32_t>& ids) {
  const auto weights = cpu::decode_cpu_weights(model);
  auto predecoded = weights;
  cpu::predecode_experts(predecoded);
  for (auto precision : {cpu::CpuPrecision::F32, cpu::CpuPrecision::F64}) {
    SCOPED_TRACE(std::string(cpu::precision_name(precision)));
    cpu::CpuEngine engine(weights, precision), reference(predecoded, precision);
    const auto got = run(engine, ids), want = run(reference, ids);
    ASSERT_EQ(got.size(), want.size());
    ASSERT_EQ(got.size(), 2 * (2 * model.config.num_layers + 3));  // twice: stages, each layer's routing, logits
    size_t finite = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(same_bits(got[i], want[i])) << "output " << i << " differs";
      for (float v : got[i]) finite += std::isfinite(v);
    }
    size_t values = 0;
    for (const auto& v : got) values += v.size();
    EXPECT_EQ(finite, values);
  }
}

TEST(CpuMxfp4Experts, EngineEqualsFullyDecodedExpertsOnPresetA) {
  std::vector<uint32_t> ids;
  for (uint32_t i = 0; i < 24; ++i) ids.push_back((i * 7919 + 13) % 200000);
  expect_identical_to_predecoded(load_model(preset_a_checkpoint() / "hf"), ids);
}

TEST(CpuMxfp4Experts, EngineEqualsFullyDecodedExpertsWithThreadedDecoding) {
  // mlp1 of one expert is 2048 x 1024 values: decoded in slices over every core.
  const SynthPreset wide{"wide", 2, 1024, 1024, 8, 2, 64, 4, 2, 1000, 8, 5, SynthStatistics::TrainedLike};
  std::vector<uint32_t> ids;
  for (uint32_t i = 0; i < 12; ++i) ids.push_back((i * 131 + 7) % 1000);
  expect_identical_to_predecoded(synthesize_model(wide), ids);
}


// A row read from the stored bytes is that row of the whole tensor decoded at once, in every
// dense encoding the engine reads; a tensor without rows of whole blocks is refused by name.
TEST(CpuDenseRows, EachRowIsThatRowOfTheWholeDecodedTensor) {
  const uint64_t rows = 3, columns = 64;
  std::vector<float> values(rows * columns);
  for (size_t i = 0; i < values.size(); ++i) values[i] = std::sin(0.37f * static_cast<float>(i)) * (1.0f + static_cast<float>(i % 7));
  for (DType dtype : {DType::F32, DType::F16, DType::BF16, DType::Q8_0}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    std::vector<uint8_t> bytes(*dtype_byte_size(dtype, values.size()));
    encode_from_f32(dtype, values.data(), values.size(), bytes.data());
    const CanonicalTensor tensor{{TensorRole::Embedding, -1, "embedding", {rows, columns}}, dtype, owned_bytes(bytes), "test"};
    const cpu::DenseRows stored(tensor);
    const auto whole = cpu::decode_dense_tensor(tensor);
    EXPECT_TRUE(same_bits(stored.decode_all(), whole));
    for (uint64_t r : {2u, 0u, 1u}) {
      std::vector<float> row(columns);
      stored.decode_row(r, row.data());
      EXPECT_TRUE(same_bits(row, std::vector<float>(whole.begin() + static_cast<std::ptrdiff_t>(r * columns),
                                                    whole.begin() + static_cast<std::ptrdiff_t>((r + 1) * columns))))
          << "row " << r;
    }
  }
  std::vector<uint8_t> q8(*dtype_byte_size(DType::Q8_0, 64));
  const CanonicalTensor split_blocks{{TensorRole::Embedding, -1, "embedding", {4, 16}}, DType::Q8_0, owned_bytes(q8), "test"};
  try {
    cpu::DenseRows refused(split_blocks);
    FAIL() << "accepted rows of half a Q8_0 block";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("whole Q8_0 blocks per row; found [4, 16]"), std::string::npos) << e.what();
  }
}

TEST(CpuDenseRows, F64WeightsDecodedStraightToDoubleAreTheF32OnesWidened) {
  auto shape = synth_preset("a");
  shape.vocab = 1000;  // preset a's layers; its vocabulary would only repeat the same decoding
  const auto model = synthesize_model(shape);
  const auto direct = cpu::decode_cpu_weights_f64(model);
  const auto widened = cpu::widen_to_f64(cpu::decode_cpu_weights(model));
  EXPECT_TRUE(same_bits(direct.unembedding, widened.unembedding));
  EXPECT_TRUE(same_bits(direct.final_norm, widened.final_norm));
  EXPECT_TRUE(same_bits(direct.embedding.decode_all(), widened.embedding.decode_all()));
  ASSERT_EQ(direct.layers.size(), widened.layers.size());
  for (size_t l = 0; l < direct.layers.size(); ++l) {
    const auto &d = direct.layers[l], &w = widened.layers[l];
    for (auto member : {&cpu::BasicCpuLayerWeights<double>::attn_norm, &cpu::BasicCpuLayerWeights<double>::q,
                        &cpu::BasicCpuLayerWeights<double>::k_bias, &cpu::BasicCpuLayerWeights<double>::out,
                        &cpu::BasicCpuLayerWeights<double>::sinks, &cpu::BasicCpuLayerWeights<double>::router,
                        &cpu::BasicCpuLayerWeights<double>::mlp2_bias})
      EXPECT_TRUE(same_bits(d.*member, w.*member)) << "layer " << l;
  }
}

}  // namespace
}  // namespace gptoss::test

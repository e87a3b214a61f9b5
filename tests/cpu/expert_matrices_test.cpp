// The engine keeps the experts encoded (the MXFP4 pair, or a GGUF's Q8_0, Q4_1, ... matrices) and
// decodes one expert just before its GEMMs. Decoding is exact, so the engine must compute bit for
// bit what it computes on every expert decoded at load (predecode_experts, through
// mxfp4::dequantize_oai): checked here for the decoder itself (every scale byte, every code, row
// slices, f32 and f64), and for every stage and the logits of both arithmetics on preset a and on
// a wider synthesized model, whose experts are large enough to be decoded on several threads.
// Tensors of the other types: the mixed golden (dense tensors in each of llama-quantize's types,
// data/quant-goldens) and a model whose experts are Q8_0 and Q4_1 (written by our GGUF writer and
// read back) equal, stage by stage and bit for bit, their twins with every tensor decoded to F32 at
// load (the engine sums its products in a fixed order: fixed_order_products.h). The embedding
// stays stored too (DenseRows: one row decoded per token), and the f64 engine's weights decoded
// straight to double are the f32 ones widened, bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>

#include "convert/gguf/gguf_model.h"
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
  const cpu::ExpertMatrices experts(m.blocks, m.scales);
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
    cpu::ExpertMatrices experts(m.blocks, scales);
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

// Both arithmetics of engines on `weights` and `reference`: every output the same bits, all finite.
void expect_identical(const cpu::CpuWeights& weights, const cpu::CpuWeights& reference_weights,
                      const std::vector<uint32_t>& ids) {
  for (auto precision : {cpu::CpuPrecision::F32, cpu::CpuPrecision::F64}) {
    SCOPED_TRACE(std::string(cpu::precision_name(precision)));
    cpu::CpuEngine engine(weights, precision), reference(reference_weights, precision);
    const auto got = run(engine, ids), want = run(reference, ids);
    ASSERT_EQ(got.size(), want.size());
    ASSERT_EQ(got.size(), 2 * (3 * weights.config.num_layers + 3));  // twice: stages, each layer's attention and routing, logits
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

void expect_identical_to_predecoded(const CanonicalModel& model, const std::vector<uint32_t>& ids) {
  const auto weights = cpu::decode_cpu_weights(model);
  auto predecoded = weights;
  cpu::predecode_experts(predecoded);
  expect_identical(weights, predecoded, ids);
}

// The engine on `model` against the engine on its F32 twin (decoded_to_f32) with the twin's experts
// decoded at load (predecode_experts: the whole matrix at once, not the per-expert rows the engine
// decodes, which an F32 twin's experts would take too).
void expect_identical_to_f32_twin(const CanonicalModel& model, const std::vector<uint32_t>& ids) {
  auto twin = cpu::decode_cpu_weights(decoded_to_f32(model));
  cpu::predecode_experts(twin);
  expect_identical(cpu::decode_cpu_weights(model), twin, ids);
}

std::vector<uint32_t> token_ids(uint32_t count, uint32_t vocab) {
  std::vector<uint32_t> ids;
  for (uint32_t i = 0; i < count; ++i) ids.push_back((i * 7919 + 13) % vocab);
  return ids;
}

TEST(CpuMxfp4Experts, EngineEqualsFullyDecodedExpertsOnPresetA) {
  expect_identical_to_predecoded(load_model(preset_a_checkpoint() / "hf"), token_ids(24, 200000));
}

TEST(CpuMxfp4Experts, EngineEqualsFullyDecodedExpertsWithThreadedDecoding) {
  // mlp1 of one expert is 2048 x 1024 values: decoded in slices over every core.
  const SynthPreset wide{"wide", 2, 1024, 1024, 8, 2, 64, 4, 2, 1000, 8, 5, SynthStatistics::TrainedLike};
  std::vector<uint32_t> ids;
  for (uint32_t i = 0; i < 12; ++i) ids.push_back((i * 131 + 7) % 1000);
  expect_identical_to_predecoded(synthesize_model(wide), ids);
}


TEST(CpuQuantizedTensors, MixedGoldenEqualsItsF32Twin) {
  const CanonicalModel model = load_gguf_model(quant_goldens_mixed_gguf());
  std::set<DType> types;
  for (const auto& t : model.tensors) types.insert(t.dtype);
  EXPECT_EQ(types.size(), 20u);  // llama-quantize's 18 types, F32, and the experts' MXFP4 pair (U8)
  expect_identical_to_f32_twin(model, token_ids(9, model.config.vocab_size));
}

// Preset a's shape at a small vocabulary, with mixed experts: layer 0 Q8_0 mlp1 and Q4_1 mlp2,
// layer 1 the other way round, layers 2 and 3 MXFP4.
CanonicalModel mixed_experts_model() {
  SynthPreset p = synth_preset("a");
  p.vocab = 1000;
  CanonicalModel model = synthesize_model(p);
  model = with_experts_as(model, 0, TensorRole::Mlp1Blocks, DType::Q8_0);
  model = with_experts_as(model, 0, TensorRole::Mlp2Blocks, DType::Q4_1);
  model = with_experts_as(model, 1, TensorRole::Mlp1Blocks, DType::Q4_1);
  return with_experts_as(model, 1, TensorRole::Mlp2Blocks, DType::Q8_0);
}

TEST(CpuQuantizedTensors, Q8_0AndQ4_1ExpertsThroughGgufEqualTheirF32Twin) {
  const CanonicalModel made = mixed_experts_model();
  TempDir dir;
  write_gguf_model(made, dir / "experts.gguf", {});
  const CanonicalModel model = load_gguf_model(dir / "experts.gguf");
  const std::pair<TensorRole, int> expected[] = {{TensorRole::Mlp1Blocks, 0}, {TensorRole::Mlp2Blocks, 0},
                                                 {TensorRole::Mlp1Blocks, 1}, {TensorRole::Mlp2Blocks, 1}};
  for (const auto& [role, layer] : expected) {
    const CanonicalTensor& written = made.get(role, layer);
    const CanonicalTensor& read = model.get(role, layer);
    EXPECT_EQ(read.dtype, written.dtype) << read.spec.name;
    EXPECT_EQ(read_all(*read.source), read_all(*written.source)) << read.spec.name << ": GGUF keeps the experts' bytes";
  }
  EXPECT_EQ(model.get(TensorRole::Mlp1Blocks, 0).dtype, DType::Q8_0);
  EXPECT_EQ(model.get(TensorRole::Mlp2Blocks, 0).dtype, DType::Q4_1);
  EXPECT_TRUE(holds_mxfp4(model.get(TensorRole::Mlp1Blocks, 2)));
  expect_identical_to_f32_twin(model, token_ids(12, model.config.vocab_size));
}

// Every type the engines read in every matrix of one small model (small_model_in: the embedding,
// projections, router, experts and unembedding), stage by stage and bit for bit its F32 twin. One
// test for every type: a test process each would cost more than the forwards.
TEST(CpuEngineEveryType, ModelInTheTypeEqualsItsF32Twin) {
  for (DType type : weight_types()) {
    SCOPED_TRACE(std::string(dtype_name(type)));
    const CanonicalModel model = small_model_in(type);
    for (TensorRole role : {TensorRole::Embedding, TensorRole::Mlp1Blocks, TensorRole::Mlp2Blocks})
      EXPECT_EQ(model.get(role, role == TensorRole::Embedding ? -1 : 1).dtype, type);
    expect_identical_to_f32_twin(model, token_ids(6, model.config.vocab_size));
  }
}

// Experts in a type the codecs only size are refused by name at load.
TEST(CpuQuantizedTensors, RefusesExpertsInATypeWithoutADecoder) {
  CanonicalModel model = mixed_experts_model();
  for (auto& t : model.tensors)
    if (t.spec.role == TensorRole::Mlp2Blocks && t.spec.layer == 1) t.dtype = DType::Q8_1;
  try {
    cpu::CpuEngine engine(model);
    FAIL() << "Q8_1 experts were accepted";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("layers.1.mlp2.blocks"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("experts stored as Q8_1, which the CPU engine cannot decode"), std::string::npos)
        << e.what();
  }
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

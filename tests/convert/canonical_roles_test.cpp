// The canonical model's tensors are enumerated once (kLayerRoles, for_each_tensor): the spec list
// and the completeness check follow it, and every role is of exactly one kind.
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>

#include "convert/canonical_model.h"
#include "convert/synthesize.h"
#include "formats/core/error.h"
#include "tests/test_support.h"

namespace gptoss {
namespace {

constexpr int kRoleCount = static_cast<int>(TensorRole::Mlp2Bias) + 1;

TEST(CanonicalRoles, EachLayerRoleOnceAndEveryRoleOfOneKind) {
  std::set<TensorRole> layer_roles(kLayerRoles.begin(), kLayerRoles.end());
  EXPECT_EQ(layer_roles.size(), kLayerRoles.size());
  for (int i = 0; i < kRoleCount; ++i) {
    const auto role = static_cast<TensorRole>(i);
    EXPECT_EQ(layer_roles.count(role) == 1, is_layer_role(role)) << canonical_name(role, 0);
    EXPECT_EQ(int{is_matrix_role(role)} + int{is_mxfp4_role(role)} + int{is_vector_role(role)}, 1)
        << canonical_name(role, 0);
  }
}

TEST(CanonicalRoles, ForEachTensorIsTheSpecList) {
  const GptOssConfig c = synth_config(synth_preset("a"));
  std::vector<std::pair<TensorRole, int>> visited;
  for_each_tensor(c.num_layers, [&](TensorRole role, int layer) { visited.emplace_back(role, layer); });
  const auto specs = canonical_tensor_specs(c);
  ASSERT_EQ(visited.size(), 3 + c.num_layers * kLayerRoles.size());
  ASSERT_EQ(specs.size(), visited.size());
  std::set<std::string> names;
  for (size_t i = 0; i < specs.size(); ++i) {
    EXPECT_EQ(specs[i].role, visited[i].first);
    EXPECT_EQ(specs[i].layer, visited[i].second);
    EXPECT_EQ(specs[i].name, canonical_name(visited[i].first, visited[i].second));
    EXPECT_EQ(specs[i].shape, canonical_shape(c, specs[i].role));
    EXPECT_TRUE(names.insert(specs[i].name).second) << specs[i].name;
  }
  EXPECT_EQ(specs.front().name, "embedding.weight");
  EXPECT_EQ(specs[1].name, "layers.0.attn_norm.weight");
  EXPECT_EQ(specs[specs.size() - 2].name, "final_norm.weight");
  EXPECT_EQ(specs.back().name, "unembedding.weight");
  // Shapes as docs/architecture.md lists them.
  const uint64_t H = c.hidden_size, I = c.intermediate_size, E = c.num_experts;
  EXPECT_EQ(canonical_shape(c, TensorRole::Embedding), (std::vector<uint64_t>{c.vocab_size, H}));
  EXPECT_EQ(canonical_shape(c, TensorRole::AttnOut), (std::vector<uint64_t>{H, c.q_rows()}));
  EXPECT_EQ(canonical_shape(c, TensorRole::AttnSinks), (std::vector<uint64_t>{c.num_heads}));
  EXPECT_EQ(canonical_shape(c, TensorRole::Mlp1Blocks), (std::vector<uint64_t>{E, 2 * I, H / 32, 16}));
  EXPECT_EQ(canonical_shape(c, TensorRole::Mlp2Scales), (std::vector<uint64_t>{E, H, I / 32}));
  // Experts in another type: the matrix itself and empty scales; the other roles do not depend on it.
  EXPECT_EQ(canonical_shape(c, TensorRole::Mlp1Blocks, DType::Q8_0), (std::vector<uint64_t>{E, 2 * I, H}));
  EXPECT_EQ(canonical_shape(c, TensorRole::Mlp1Scales, DType::Q8_0), (std::vector<uint64_t>{E, 2 * I, 0}));
  EXPECT_EQ(canonical_shape(c, TensorRole::Mlp2Blocks, DType::F16), (std::vector<uint64_t>{E, H, I}));
  EXPECT_EQ(canonical_shape(c, TensorRole::Mlp2Scales, DType::F16), (std::vector<uint64_t>{E, H, 0}));
  EXPECT_EQ(canonical_shape(c, TensorRole::Mlp1Bias, DType::Q8_0), canonical_shape(c, TensorRole::Mlp1Bias));
}

// Experts other than MXFP4 (a GGUF's Q8_0 or Q4_1 experts) are a complete canonical model: the
// matrix in its type with empty scales, checked for shape and size like any tensor; writers that
// store experts only as the MXFP4 pair requantize them to it, a declared lossy step.
TEST(CanonicalRoles, ExpertsInAnotherTypeAreAMatrixWithEmptyScales) {
  SynthPreset p = synth_preset("a");
  p.vocab = 1000;
  const CanonicalModel base = synthesize_model(p);
  const CanonicalModel model = test::with_experts_as(base, 2, TensorRole::Mlp2Blocks, DType::Q4_1);
  const CanonicalTensor& matrix = model.get(TensorRole::Mlp2Blocks, 2);
  EXPECT_EQ(matrix.dtype, DType::Q4_1);
  EXPECT_FALSE(holds_mxfp4(matrix));
  EXPECT_EQ(model.get(TensorRole::Mlp2Scales, 2).source->size(), 0u);
  EXPECT_TRUE(holds_mxfp4(model.get(TensorRole::Mlp2Blocks, 1)));

  auto expect_refused = [&](std::vector<CanonicalTensor> tensors, const std::string& message) {
    try {
      finalize_canonical_tensors(model.config, tensors, "edited");
      ADD_FAILURE() << "accepted; expected " << message;
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  auto edited = [&](TensorRole role, auto edit) {
    std::vector<CanonicalTensor> tensors = model.tensors;
    for (auto& t : tensors)
      if (t.spec.role == role && t.spec.layer == 2) edit(t);
    return tensors;
  };
  // Scales that are not empty beside a Q4_1 matrix; a matrix one row short; bytes of another size.
  expect_refused(edited(TensorRole::Mlp2Scales, [&](CanonicalTensor& t) { t = base.get(TensorRole::Mlp2Scales, 2); }),
                 "layers.2.mlp2.scales (from ");
  expect_refused(edited(TensorRole::Mlp2Blocks, [](CanonicalTensor& t) { t.spec.shape[1] -= 1; }),
                 "layers.2.mlp2.blocks (from ");
  expect_refused(edited(TensorRole::Mlp2Blocks, [](CanonicalTensor& t) { t.dtype = DType::Q4_0; }),
                 "layers.2.mlp2.blocks holds");
  // A type the codecs only size is not the other form: its bytes are checked as the pair's.
  expect_refused(edited(TensorRole::Mlp2Blocks, [](CanonicalTensor& t) { t.dtype = DType::Q8_1; }),
                 "layers.2.mlp2.blocks (from ");

  // with_mxfp4_experts, what the writers that store experts only as the pair start from, gives that
  // layer the pair (quantize_mxfp4_pair of the Q4_1 matrix), declares the step, and shares the
  // other layers' pairs as they are.
  std::vector<LossyStep> lossy;
  const CanonicalModel paired = with_mxfp4_experts(model, lossy);
  ASSERT_EQ(lossy.size(), 1u);
  EXPECT_EQ(lossy[0].name, "layers.2.mlp2.blocks");
  EXPECT_EQ(lossy[0].from, DType::Q4_1);
  EXPECT_EQ(lossy[0].to, DType::MXFP4);
  for (const auto& t : paired.tensors) {
    if (!is_mxfp4_role(t.spec.role)) continue;
    EXPECT_EQ(t.dtype, DType::U8) << t.spec.name;
    EXPECT_EQ(t.spec.shape, canonical_shape(model.config, t.spec.role)) << t.spec.name;
    if (t.spec.layer != 2 || t.spec.role == TensorRole::Mlp1Blocks || t.spec.role == TensorRole::Mlp1Scales) {
      EXPECT_EQ(t.source, model.find(t.spec.name)->source) << t.spec.name;
    }
  }
  const auto pair = quantize_mxfp4_pair(matrix.source, DType::Q4_1, matrix.spec.shape.back(), nullptr);
  EXPECT_EQ(read_all(*paired.get(TensorRole::Mlp2Blocks, 2).source), read_all(*pair.blocks));
  EXPECT_EQ(read_all(*paired.get(TensorRole::Mlp2Scales, 2).source), read_all(*pair.scales));
  std::vector<CanonicalTensor> tensors = paired.tensors;
  EXPECT_NO_THROW(finalize_canonical_tensors(paired.config, tensors, "paired"));
}

}  // namespace
}  // namespace gptoss

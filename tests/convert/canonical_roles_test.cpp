// The canonical model's tensors are enumerated once (kLayerRoles, for_each_tensor): the spec list
// and the completeness check follow it, and every role is of exactly one kind.
#include <gtest/gtest.h>

#include <set>

#include "convert/canonical_model.h"
#include "convert/synthesize.h"

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
}

}  // namespace
}  // namespace gptoss

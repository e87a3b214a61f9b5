// GGUF tensor names come from convert/gguf/gguf_names only: one name per role or expert kind.
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>

#include "convert/gguf/gguf_names.h"

namespace gptoss {
namespace {

TEST(GgufNames, OneNamePerRoleAndExpertKind) {
  EXPECT_EQ(gguf_tensor_name(TensorRole::Embedding, -1), "token_embd.weight");
  EXPECT_EQ(gguf_tensor_name(TensorRole::Unembedding, -1), "output.weight");
  EXPECT_EQ(gguf_tensor_name(TensorRole::FinalNorm, -1), "output_norm.weight");
  EXPECT_EQ(gguf_tensor_name(TensorRole::AttnQ, 3), "blk.3.attn_q.weight");
  EXPECT_EQ(gguf_tensor_name(TensorRole::Mlp2Bias, 0), "blk.0.ffn_down_exps.bias");
  EXPECT_EQ(gguf_expert_tensor_name(GgufTensorKind::UpExps, 7), "blk.7.ffn_up_exps.weight");
  EXPECT_EQ(gguf_expert_tensor_name(GgufTensorKind::UpExpsBias, 7), "blk.7.ffn_up_exps.bias");
  EXPECT_EQ(gguf_expert_tensor_name(GgufTensorKind::GateExps, 1), "blk.1.ffn_gate_exps.weight");
  EXPECT_EQ(gguf_expert_tensor_name(GgufTensorKind::DownExps, 1), "blk.1.ffn_down_exps.weight");
  // The experts are stored split or repacked: no role names one GGUF tensor.
  EXPECT_THROW(gguf_tensor_name(TensorRole::Mlp1Blocks, 0), std::logic_error);
  EXPECT_THROW(gguf_tensor_name(TensorRole::Mlp1Bias, 0), std::logic_error);
  EXPECT_THROW(gguf_expert_tensor_name(GgufTensorKind::Dense, 0), std::logic_error);
}

TEST(GgufNames, TheListUsesTheSameNames) {
  const auto names = gguf_tensor_names(2);
  EXPECT_EQ(names.size(), 3u + 2 * (3 + 16));
  std::set<std::string> unique;
  for (const auto& g : names) {
    EXPECT_TRUE(unique.insert(g.name).second) << g.name;
    if (g.kind == GgufTensorKind::Dense) {
      EXPECT_EQ(g.name, gguf_tensor_name(g.role, g.layer));
    } else {
      EXPECT_EQ(g.name, gguf_expert_tensor_name(g.kind, g.layer));
    }
  }
  EXPECT_EQ(names.front().name, "blk.0.ffn_down_exps.weight");
  EXPECT_EQ(names.back().name, "output_norm.weight");
}

}  // namespace
}  // namespace gptoss

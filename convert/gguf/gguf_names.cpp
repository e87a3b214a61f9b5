#include "convert/gguf/gguf_names.h"

namespace gptoss {

std::vector<GgufTensorName> gguf_tensor_names(uint32_t layers) {
  std::vector<GgufTensorName> out;
  auto blk = [](int l, const char* what) { return "blk." + std::to_string(l) + "." + what; };
  const int n = static_cast<int>(layers);
  // The converter emits the MXFP4 experts first, from its extra-tensor pass.
  for (int l = 0; l < n; ++l) {
    out.push_back({blk(l, "ffn_down_exps.weight"), GgufTensorKind::DownExps, TensorRole::Mlp2Blocks, l});
    out.push_back({blk(l, "ffn_gate_exps.weight"), GgufTensorKind::GateExps, TensorRole::Mlp1Blocks, l});
    out.push_back({blk(l, "ffn_up_exps.weight"), GgufTensorKind::UpExps, TensorRole::Mlp1Blocks, l});
  }
  // Then the checkpoint's tensors in the order of their sorted HF names: lm_head, model.embed_tokens,
  // model.layers.N.{input_layernorm, mlp.experts.*_bias, mlp.router.*, post_attention_layernorm,
  // self_attn.{k,o,q}_proj.{bias,weight}, sinks, v_proj.*}, model.norm.
  out.push_back({"output.weight", GgufTensorKind::Dense, TensorRole::Unembedding, -1});
  out.push_back({"token_embd.weight", GgufTensorKind::Dense, TensorRole::Embedding, -1});
  for (int l = 0; l < n; ++l) {
    auto dense = [&](const char* what, TensorRole role) { out.push_back({blk(l, what), GgufTensorKind::Dense, role, l}); };
    dense("attn_norm.weight", TensorRole::AttnNorm);
    dense("ffn_down_exps.bias", TensorRole::Mlp2Bias);
    out.push_back({blk(l, "ffn_gate_exps.bias"), GgufTensorKind::GateExpsBias, TensorRole::Mlp1Bias, l});
    out.push_back({blk(l, "ffn_up_exps.bias"), GgufTensorKind::UpExpsBias, TensorRole::Mlp1Bias, l});
    dense("ffn_gate_inp.bias", TensorRole::RouterBias);
    dense("ffn_gate_inp.weight", TensorRole::RouterWeight);
    dense("post_attention_norm.weight", TensorRole::MlpNorm);
    dense("attn_k.bias", TensorRole::AttnKBias);
    dense("attn_k.weight", TensorRole::AttnK);
    dense("attn_output.bias", TensorRole::AttnOutBias);
    dense("attn_output.weight", TensorRole::AttnOut);
    dense("attn_q.bias", TensorRole::AttnQBias);
    dense("attn_q.weight", TensorRole::AttnQ);
    dense("attn_sinks.weight", TensorRole::AttnSinks);
    dense("attn_v.bias", TensorRole::AttnVBias);
    dense("attn_v.weight", TensorRole::AttnV);
  }
  out.push_back({"output_norm.weight", GgufTensorKind::Dense, TensorRole::FinalNorm, -1});
  return out;
}

}  // namespace gptoss

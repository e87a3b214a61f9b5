#include "convert/gguf/gguf_names.h"

#include <stdexcept>

namespace gptoss {
namespace {
std::string blk(int layer, const char* what) { return "blk." + std::to_string(layer) + "." + what; }
}  // namespace

std::string gguf_tensor_name(TensorRole role, int layer) {
  switch (role) {
    case TensorRole::Embedding: return "token_embd.weight";
    case TensorRole::Unembedding: return "output.weight";
    case TensorRole::FinalNorm: return "output_norm.weight";
    case TensorRole::AttnNorm: return blk(layer, "attn_norm.weight");
    case TensorRole::AttnQ: return blk(layer, "attn_q.weight");
    case TensorRole::AttnQBias: return blk(layer, "attn_q.bias");
    case TensorRole::AttnK: return blk(layer, "attn_k.weight");
    case TensorRole::AttnKBias: return blk(layer, "attn_k.bias");
    case TensorRole::AttnV: return blk(layer, "attn_v.weight");
    case TensorRole::AttnVBias: return blk(layer, "attn_v.bias");
    case TensorRole::AttnOut: return blk(layer, "attn_output.weight");
    case TensorRole::AttnOutBias: return blk(layer, "attn_output.bias");
    case TensorRole::AttnSinks: return blk(layer, "attn_sinks.weight");
    case TensorRole::MlpNorm: return blk(layer, "post_attention_norm.weight");
    case TensorRole::RouterWeight: return blk(layer, "ffn_gate_inp.weight");
    case TensorRole::RouterBias: return blk(layer, "ffn_gate_inp.bias");
    case TensorRole::Mlp2Bias: return blk(layer, "ffn_down_exps.bias");
    case TensorRole::Mlp1Blocks:
    case TensorRole::Mlp1Scales:
    case TensorRole::Mlp1Bias:
    case TensorRole::Mlp2Blocks:
    case TensorRole::Mlp2Scales: break;
  }
  throw std::logic_error(canonical_name(role, layer) + " is not one GGUF tensor (see gguf_expert_tensor_name)");
}

std::string gguf_expert_tensor_name(GgufTensorKind kind, int layer) {
  switch (kind) {
    case GgufTensorKind::GateExps: return blk(layer, "ffn_gate_exps.weight");
    case GgufTensorKind::UpExps: return blk(layer, "ffn_up_exps.weight");
    case GgufTensorKind::DownExps: return blk(layer, "ffn_down_exps.weight");
    case GgufTensorKind::GateExpsBias: return blk(layer, "ffn_gate_exps.bias");
    case GgufTensorKind::UpExpsBias: return blk(layer, "ffn_up_exps.bias");
    case GgufTensorKind::Dense: break;
  }
  throw std::logic_error("a dense GGUF tensor is named by its role (gguf_tensor_name)");
}

std::vector<GgufTensorName> gguf_tensor_names(uint32_t layers) {
  std::vector<GgufTensorName> out;
  const int n = static_cast<int>(layers);
  auto dense = [&](TensorRole role, int layer) {
    out.push_back({gguf_tensor_name(role, layer), GgufTensorKind::Dense, role, layer});
  };
  auto experts = [&](GgufTensorKind kind, TensorRole role, int layer) {
    out.push_back({gguf_expert_tensor_name(kind, layer), kind, role, layer});
  };
  // The converter emits the MXFP4 experts first, from its extra-tensor pass.
  for (int l = 0; l < n; ++l) {
    experts(GgufTensorKind::DownExps, TensorRole::Mlp2Blocks, l);
    experts(GgufTensorKind::GateExps, TensorRole::Mlp1Blocks, l);
    experts(GgufTensorKind::UpExps, TensorRole::Mlp1Blocks, l);
  }
  // Then the checkpoint's tensors in the order of their sorted HF names: lm_head, model.embed_tokens,
  // model.layers.N.{input_layernorm, mlp.experts.*_bias, mlp.router.*, post_attention_layernorm,
  // self_attn.{k,o,q}_proj.{bias,weight}, sinks, v_proj.*}, model.norm.
  dense(TensorRole::Unembedding, -1);
  dense(TensorRole::Embedding, -1);
  for (int l = 0; l < n; ++l) {
    dense(TensorRole::AttnNorm, l);
    dense(TensorRole::Mlp2Bias, l);
    experts(GgufTensorKind::GateExpsBias, TensorRole::Mlp1Bias, l);
    experts(GgufTensorKind::UpExpsBias, TensorRole::Mlp1Bias, l);
    dense(TensorRole::RouterBias, l);
    dense(TensorRole::RouterWeight, l);
    dense(TensorRole::MlpNorm, l);
    dense(TensorRole::AttnKBias, l);
    dense(TensorRole::AttnK, l);
    dense(TensorRole::AttnOutBias, l);
    dense(TensorRole::AttnOut, l);
    dense(TensorRole::AttnQBias, l);
    dense(TensorRole::AttnQ, l);
    dense(TensorRole::AttnSinks, l);
    dense(TensorRole::AttnVBias, l);
    dense(TensorRole::AttnV, l);
  }
  dense(TensorRole::FinalNorm, -1);
  return out;
}

}  // namespace gptoss

#pragma once
// Canonical tensor roles <-> llama.cpp's gpt-oss tensor names, and the order its converter
// writes them in (the MXFP4 experts first, then the rest in the sorted order of their Hugging
// Face names).
#include <string>
#include <vector>

#include "convert/canonical_model.h"

namespace gptoss {

// One tensor of a gpt-oss GGUF and the canonical tensor(s) it comes from.
enum class GgufTensorKind {
  Dense,          // one canonical tensor, same elements (dense weights, norms, biases, sinks, router)
  GateExps, UpExps, DownExps,            // MXFP4 experts (from / to the canonical blocks+scales pair)
  GateExpsBias, UpExpsBias,              // even / odd elements of the canonical mlp1 bias
};

struct GgufTensorName {
  std::string name;
  GgufTensorKind kind;
  TensorRole role;  // Dense: the canonical role; experts: Mlp1Blocks / Mlp2Blocks; biases: Mlp1Bias
  int layer;
};

// The GGUF name of the tensor holding a canonical role's elements as they are (kind Dense), e.g.
// "token_embd.weight", "blk.3.attn_q.weight"; std::logic_error for the expert roles, which GGUF
// stores split or repacked (gguf_expert_tensor_name).
std::string gguf_tensor_name(TensorRole role, int layer);
// The GGUF name of a layer's expert tensor of `kind` (not Dense), e.g. "blk.3.ffn_up_exps.weight".
std::string gguf_expert_tensor_name(GgufTensorKind kind, int layer);

// Every tensor of a gpt-oss GGUF with `layers` layers, in llama.cpp's converter order.
std::vector<GgufTensorName> gguf_tensor_names(uint32_t layers);

}  // namespace gptoss

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

// Every tensor of a gpt-oss GGUF with `layers` layers, in llama.cpp's converter order.
std::vector<GgufTensorName> gguf_tensor_names(uint32_t layers);

}  // namespace gptoss

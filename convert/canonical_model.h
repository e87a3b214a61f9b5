#pragma once
// The one GPT-OSS model every conversion goes through. Its tensor layout is the OpenAI/HF
// checkpoint layout:
//   dense weights [out, in] (nn.Linear orientation), Q/K/V separate, heads contiguous, RoPE
//   pairs half-split (i, i + D/2), no prescale;
//   experts as the OpenAI MXFP4 pair: blocks U8 [E, rows, in/32, 16] (low nibble = even element)
//   and scales U8 [E, rows, in/32] (value 2^(s-127)); mlp1 rows interleaved gate (even) / up (odd).
//   A GGUF may store a layer's experts in another type ggml decodes (fine-tunes ship Q8_0 or Q4_1
//   experts): then the *Blocks tensor holds the matrix [E, rows, in] in that type, its rows as
//   ggml stores them (each block carrying its own scales), and the *Scales tensor is empty (U8
//   [E, rows, 0]). holds_mxfp4 tells the two apart; a writer that can only store the MXFP4 pair
//   requantizes the other form to it, a declared lossy step (with_mxfp4_experts).
// Dense tensors keep their stored encoding (BF16, F16, F32, Q8_0 or another ggml type) so nothing
// is converted until a writer needs it.
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "convert/dtype_convert.h"
#include "convert/gptoss_config.h"
#include "convert/tokenizer_data.h"
#include "formats/core/dtype.h"
#include "formats/core/tensor_source.h"

namespace gptoss {

enum class TensorRole {
  Embedding, Unembedding, FinalNorm,
  AttnNorm, AttnQ, AttnQBias, AttnK, AttnKBias, AttnV, AttnVBias, AttnOut, AttnOutBias, AttnSinks,
  MlpNorm, RouterWeight, RouterBias,
  Mlp1Blocks, Mlp1Scales, Mlp1Bias, Mlp2Blocks, Mlp2Scales, Mlp2Bias,
};

// The roles of one layer, in canonical order: the one list of what a layer holds. The canonical
// tensor set (canonical_tensor_specs, the completeness check) and the engines' weight loading
// walk it through for_each_tensor / for_each_layer_tensor below, so a role added here reaches
// each of them (and each of their switches over TensorRole, which -Wswitch checks).
inline constexpr std::array kLayerRoles = {
    TensorRole::AttnNorm,     TensorRole::AttnQ,      TensorRole::AttnQBias,  TensorRole::AttnK,
    TensorRole::AttnKBias,    TensorRole::AttnV,      TensorRole::AttnVBias,  TensorRole::AttnOut,
    TensorRole::AttnOutBias,  TensorRole::AttnSinks,  TensorRole::MlpNorm,    TensorRole::RouterWeight,
    TensorRole::RouterBias,   TensorRole::Mlp1Blocks, TensorRole::Mlp1Scales, TensorRole::Mlp1Bias,
    TensorRole::Mlp2Blocks,   TensorRole::Mlp2Scales, TensorRole::Mlp2Bias,
};

bool is_layer_role(TensorRole role);
bool is_mxfp4_role(TensorRole role);     // *Blocks and *Scales: the experts (holds_mxfp4 says in which form)
bool is_expert_matrix_role(TensorRole role);  // *Blocks: the expert matrices (Mlp1Blocks, Mlp2Blocks)
// The *Blocks and the *Scales role of the experts an expert role (is_mxfp4_role) belongs to.
TensorRole expert_matrix_role(TensorRole role);
TensorRole expert_scales_role(TensorRole role);
bool is_matrix_role(TensorRole role);    // 2-D dense weights a writer may store as Q8_0/BF16/F16
bool is_vector_role(TensorRole role);    // neither: norms, biases, sinks (always read whole)
std::string canonical_name(TensorRole role, int layer);  // e.g. "layers.3.attn_q.weight"

struct TensorSpec {
  TensorRole role;
  int layer;  // -1 for global tensors
  std::string name;
  std::vector<uint64_t> shape;  // elements, outermost first (numpy order)
};

// The shape of a role's tensors in a model with this config (elements, outermost first), where
// the layer's experts are stored as `experts`: U8 for the MXFP4 pair, else the type of the
// *Blocks matrix [E, rows, in] (its *Scales then [E, rows, 0]). Only the expert roles depend on it.
std::vector<uint64_t> canonical_shape(const GptOssConfig& config, TensorRole role, DType experts = DType::U8);

// Every tensor of a model with `num_layers` layers, in canonical order, as gemma.cpp's
// ForEachTensor: visit(role, layer) for the embedding (layer -1), each layer's kLayerRoles, then
// the final norm and the unembedding (layer -1).
template <class Visit>
void for_each_tensor(uint32_t num_layers, Visit&& visit) {
  visit(TensorRole::Embedding, -1);
  for (uint32_t l = 0; l < num_layers; ++l)
    for (TensorRole role : kLayerRoles) visit(role, static_cast<int>(l));
  visit(TensorRole::FinalNorm, -1);
  visit(TensorRole::Unembedding, -1);
}

// Every tensor of a model with this config, in canonical order (for_each_tensor with names and shapes).
std::vector<TensorSpec> canonical_tensor_specs(const GptOssConfig& config);

struct CanonicalTensor {
  TensorSpec spec;
  DType dtype;  // encoding of the bytes `source` yields
  TensorSourcePtr source;
  std::string origin;  // "file:tensor" it came from, for messages
};

// Whether `tensor` (of an expert role) is part of an MXFP4 pair: U8 bytes. An expert matrix in
// another type (and its empty scales) is not; the other roles never are.
bool holds_mxfp4(const CanonicalTensor& tensor);

struct CanonicalModel {
  GptOssConfig config;
  std::vector<CanonicalTensor> tensors;  // canonical order, complete
  std::shared_ptr<const TokenizerData> tokenizer;  // may be null
  std::vector<std::string> notes;        // lossy steps and other facts a user must be told
  std::string source_description;        // e.g. "Hugging Face safetensors checkpoint hf/"

  const CanonicalTensor& get(TensorRole role, int layer = -1) const;
  const CanonicalTensor* find(const std::string& name) const;
};

// The tensors of one layer of `model`, in canonical order: visit(role, tensor) for each of
// kLayerRoles. An engine's weight loading switches on the role, so the compiler names a role it
// does not handle.
template <class Visit>
void for_each_layer_tensor(const CanonicalModel& model, int layer, Visit&& visit) {
  for (TensorRole role : kLayerRoles) visit(role, model.get(role, layer));
}

// `model` with every expert matrix that is not the MXFP4 pair (a GGUF's Q8_0, Q4_1 or Q4_K
// experts) requantized to the pair, for the writers that store experts only as the pair
// (safetensors, model.bin): rows decoded and quantized by ggml's MXFP4 rule as they stream
// (quantize_mxfp4_pair), so the output holds what llama-quantize would make of the same values.
// Each requantized matrix is a lossy step appended to `lossy` (its *Blocks tensor, its type ->
// MXFP4). The pair's tensors, and all others, are shared with `model`.
CanonicalModel with_mxfp4_experts(const CanonicalModel& model, std::vector<LossyStep>& lossy);

// Checks that `tensors` has exactly the canonical set with the right shapes and plausible
// encodings, then sorts it into canonical order. Throws FormatError naming `source`.
void finalize_canonical_tensors(const GptOssConfig& config, std::vector<CanonicalTensor>& tensors,
                                const std::string& source);

}  // namespace gptoss

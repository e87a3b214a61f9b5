#pragma once
// llama-quantize's mixes for gpt-oss, as one table: the type each dense weight of a gpt-oss GGUF
// gets from `llama-quantize <mix>` without an importance matrix (llama.cpp's
// llama_tensor_get_type for arch gpt-oss), so that a mix can be written in one pass from any
// model the converter reads. docs/gguf.md explains the rules.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "convert/canonical_model.h"
#include "formats/core/dtype.h"

namespace gptoss {

enum class GgufMix { Q4_K_M, Q5_K_M, Q6_K, Q8_0, MXFP4 };

struct GgufMixInfo {
  GgufMix mix;
  std::string_view name;      // as --mix takes it (lower case, llama-quantize's name in any case)
  std::string_view llama_name;  // llama-quantize's ftype argument
  uint32_t file_type;         // general.file_type: llama.cpp's llama_ftype
  DType base;                 // the type of token_embd, attn_q, attn_k, attn_output
  DType output;               // output.weight
  DType more_bits;            // attn_v of the layers use_more_bits picks (the base where none)
};

const GgufMixInfo& gguf_mix_info(GgufMix mix);
std::optional<GgufMix> gguf_mix_from_name(std::string_view name);  // case-insensitive
std::vector<std::string> gguf_mix_names();

// The type llama-quantize gives the dense weight of `role` in `layer` of a model with `layers`
// layers and `experts` experts, whose rows are `row_elements` wide (ggml's ne[0]): the mix's
// choice, then the fallback for rows that are not a whole number of its blocks (Q4_K -> Q5_0,
// Q5_K -> Q5_1, Q6_K -> Q8_0; F16 when even that does not divide). Only the six dense matrices
// are quantized (is_matrix_role, not the router); every other tensor keeps the converter's type.
DType gguf_mix_type(GgufMix mix, TensorRole role, int layer, uint32_t layers, uint32_t experts, uint64_t row_elements);

// llama.cpp's use_more_bits: the first and last eighth of the layers and every third between.
bool gguf_mix_uses_more_bits(int layer, uint32_t layers);

// llama.cpp's model loader holds tensors in a map ordered by layer (-1 for global tensors), then
// name; llama-quantize writes them in that order.
bool llama_loader_order(const std::string& a, const std::string& b);

}  // namespace gptoss

#include "convert/gguf/gguf_mix.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <stdexcept>

namespace gptoss {
namespace {

// llama_tensor_get_type for arch gpt-oss (one output.weight, so embeddings are not tied; never
// Falcon or a 70B llama): the output gets Q6_K in the K mixes (Q8_0 where its rows are not whole
// blocks of the mix's type, which the fallback below gives as well), Q8_0 in Q8_0 and MXFP4_MOE;
// Q4_K_M and Q5_K_M give attn_v Q6_K in the layers use_more_bits picks; MXFP4_MOE puts every dense
// matrix in Q8_0 (and every 3-D tensor, the experts, in MXFP4).
constexpr std::array<GgufMixInfo, 5> kMixes = {{
    {GgufMix::Q4_K_M, "q4_k_m", "Q4_K_M", 15, DType::Q4_K, DType::Q6_K, DType::Q6_K},
    {GgufMix::Q5_K_M, "q5_k_m", "Q5_K_M", 17, DType::Q5_K, DType::Q6_K, DType::Q6_K},
    {GgufMix::Q6_K, "q6_k", "Q6_K", 18, DType::Q6_K, DType::Q6_K, DType::Q6_K},
    {GgufMix::Q8_0, "q8_0", "Q8_0", 7, DType::Q8_0, DType::Q8_0, DType::Q8_0},
    {GgufMix::MXFP4, "mxfp4", "MXFP4_MOE", 38, DType::Q8_0, DType::Q8_0, DType::Q8_0},
}};

// tensor_type_fallback: a 256-element type on rows that are not whole blocks becomes a 32-element
// one of about as many bits (the only fallbacks the mixes above can need).
struct Fallback {
  DType from, to;
};
constexpr Fallback kFallbacks[] = {{DType::Q4_K, DType::Q5_0}, {DType::Q5_K, DType::Q5_1}, {DType::Q6_K, DType::Q8_0}};

bool iequal(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return std::tolower(x) == std::tolower(y); });
}

int layer_of(const std::string& name) {  // sscanf("blk.%d."), -1 for global tensors
  int layer = -1;
  std::sscanf(name.c_str(), "blk.%d.", &layer);
  return layer;
}
}  // namespace

const GgufMixInfo& gguf_mix_info(GgufMix mix) {
  for (const auto& m : kMixes)
    if (m.mix == mix) return m;
  throw std::logic_error("unknown mix");
}

std::optional<GgufMix> gguf_mix_from_name(std::string_view name) {
  for (const auto& m : kMixes)
    if (iequal(m.name, name) || iequal(m.llama_name, name)) return m.mix;
  return std::nullopt;
}

std::vector<std::string> gguf_mix_names() {
  std::vector<std::string> names;
  for (const auto& m : kMixes) names.emplace_back(m.name);
  return names;
}

bool gguf_mix_uses_more_bits(int layer, uint32_t layers) {
  const int n = static_cast<int>(layers);
  return layer < n / 8 || layer >= 7 * n / 8 || (layer - n / 8) % 3 == 2;
}

DType gguf_mix_type(GgufMix mix, TensorRole role, int layer, uint32_t layers, uint32_t experts, uint64_t row_elements) {
  if (!is_matrix_role(role) || role == TensorRole::RouterWeight)
    throw std::logic_error(canonical_name(role, layer) + " is not quantized by a mix");
  const GgufMixInfo& m = gguf_mix_info(mix);
  DType type = m.base;
  if (role == TensorRole::Unembedding) type = m.output;
  if (role == TensorRole::AttnV && gguf_mix_uses_more_bits(layer, layers)) type = m.more_bits;
  // llama.cpp's rule for 8-expert models (Mixtral): attn_v and attn_k in Q8_0, and a Q4_K_M's
  // attn_output in Q5_K.
  if (experts == 8 && mix != GgufMix::MXFP4) {
    if (role == TensorRole::AttnV || role == TensorRole::AttnK) type = DType::Q8_0;
    if (role == TensorRole::AttnOut && mix == GgufMix::Q4_K_M) type = DType::Q5_K;
  }
  if (row_elements % dtype_info(type).block_elements == 0) return type;
  const Fallback* fallback = nullptr;
  for (const auto& f : kFallbacks)
    if (f.from == type) fallback = &f;
  if (!fallback)  // llama-quantize stops here too
    throw std::invalid_argument(std::string(gguf_mix_info(mix).llama_name) + ": " + canonical_name(role, layer) +
                                " has rows of " + std::to_string(row_elements) + " elements, not a whole number of " +
                                std::string(dtype_name(type)) + " blocks, and llama-quantize has no fallback for " +
                                std::string(dtype_name(type)));
  return row_elements % dtype_info(fallback->to).block_elements == 0 ? fallback->to : DType::F16;
}

bool llama_loader_order(const std::string& a, const std::string& b) {
  const int la = layer_of(a), lb = layer_of(b);
  return la != lb ? la < lb : a < b;
}

}  // namespace gptoss

#include "convert/canonical_model.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "formats/core/checked_math.h"
#include "formats/core/error.h"

namespace gptoss {

std::optional<uint32_t> TokenizerData::find_special(std::string_view text) const {
  for (uint32_t id = 0; id < tokens.size(); ++id)
    if (is_special(id) && tokens[id] == text) return id;
  return std::nullopt;
}

bool is_layer_role(TensorRole r) {
  return r != TensorRole::Embedding && r != TensorRole::Unembedding && r != TensorRole::FinalNorm;
}

bool is_mxfp4_role(TensorRole r) {
  return r == TensorRole::Mlp1Blocks || r == TensorRole::Mlp1Scales || r == TensorRole::Mlp2Blocks ||
         r == TensorRole::Mlp2Scales;
}

bool is_matrix_role(TensorRole r) {
  return r == TensorRole::Embedding || r == TensorRole::Unembedding || r == TensorRole::AttnQ ||
         r == TensorRole::AttnK || r == TensorRole::AttnV || r == TensorRole::AttnOut || r == TensorRole::RouterWeight;
}

std::string canonical_name(TensorRole role, int layer) {
  const std::string l = "layers." + std::to_string(layer) + ".";
  switch (role) {
    case TensorRole::Embedding: return "embedding.weight";
    case TensorRole::Unembedding: return "unembedding.weight";
    case TensorRole::FinalNorm: return "final_norm.weight";
    case TensorRole::AttnNorm: return l + "attn_norm.weight";
    case TensorRole::AttnQ: return l + "attn_q.weight";
    case TensorRole::AttnQBias: return l + "attn_q.bias";
    case TensorRole::AttnK: return l + "attn_k.weight";
    case TensorRole::AttnKBias: return l + "attn_k.bias";
    case TensorRole::AttnV: return l + "attn_v.weight";
    case TensorRole::AttnVBias: return l + "attn_v.bias";
    case TensorRole::AttnOut: return l + "attn_out.weight";
    case TensorRole::AttnOutBias: return l + "attn_out.bias";
    case TensorRole::AttnSinks: return l + "attn_sinks";
    case TensorRole::MlpNorm: return l + "mlp_norm.weight";
    case TensorRole::RouterWeight: return l + "router.weight";
    case TensorRole::RouterBias: return l + "router.bias";
    case TensorRole::Mlp1Blocks: return l + "mlp1.blocks";
    case TensorRole::Mlp1Scales: return l + "mlp1.scales";
    case TensorRole::Mlp1Bias: return l + "mlp1.bias";
    case TensorRole::Mlp2Blocks: return l + "mlp2.blocks";
    case TensorRole::Mlp2Scales: return l + "mlp2.scales";
    case TensorRole::Mlp2Bias: return l + "mlp2.bias";
  }
  return "?";
}

std::vector<TensorSpec> canonical_tensor_specs(const GptOssConfig& c) {
  const uint64_t V = c.vocab_size, H = c.hidden_size, I = c.intermediate_size, E = c.num_experts;
  const uint64_t Q = c.q_rows(), KV = c.kv_rows();
  std::vector<TensorSpec> specs;
  auto add = [&](TensorRole role, int layer, std::vector<uint64_t> shape) {
    specs.push_back({role, layer, canonical_name(role, layer), std::move(shape)});
  };
  add(TensorRole::Embedding, -1, {V, H});
  for (int l = 0; l < static_cast<int>(c.num_layers); ++l) {
    add(TensorRole::AttnNorm, l, {H});
    add(TensorRole::AttnQ, l, {Q, H});
    add(TensorRole::AttnQBias, l, {Q});
    add(TensorRole::AttnK, l, {KV, H});
    add(TensorRole::AttnKBias, l, {KV});
    add(TensorRole::AttnV, l, {KV, H});
    add(TensorRole::AttnVBias, l, {KV});
    add(TensorRole::AttnOut, l, {H, Q});
    add(TensorRole::AttnOutBias, l, {H});
    add(TensorRole::AttnSinks, l, {c.num_heads});
    add(TensorRole::MlpNorm, l, {H});
    add(TensorRole::RouterWeight, l, {E, H});
    add(TensorRole::RouterBias, l, {E});
    add(TensorRole::Mlp1Blocks, l, {E, 2 * I, H / 32, 16});
    add(TensorRole::Mlp1Scales, l, {E, 2 * I, H / 32});
    add(TensorRole::Mlp1Bias, l, {E, 2 * I});
    add(TensorRole::Mlp2Blocks, l, {E, H, I / 32, 16});
    add(TensorRole::Mlp2Scales, l, {E, H, I / 32});
    add(TensorRole::Mlp2Bias, l, {E, H});
  }
  add(TensorRole::FinalNorm, -1, {H});
  add(TensorRole::Unembedding, -1, {V, H});
  return specs;
}

const CanonicalTensor& CanonicalModel::get(TensorRole role, int layer) const {
  for (const auto& t : tensors)
    if (t.spec.role == role && t.spec.layer == layer) return t;
  throw_format_error(source_description, canonical_name(role, layer), std::nullopt, "tensor missing from the model");
}

const CanonicalTensor* CanonicalModel::find(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.spec.name == name) return &t;
  return nullptr;
}

void finalize_canonical_tensors(const GptOssConfig& config, std::vector<CanonicalTensor>& tensors,
                                const std::string& source) {
  const auto specs = canonical_tensor_specs(config);
  std::map<std::string, size_t> order;
  for (size_t i = 0; i < specs.size(); ++i) order[specs[i].name] = i;
  std::set<std::string> seen;
  std::ostringstream problems;
  for (const auto& t : tensors) {
    auto it = order.find(t.spec.name);
    if (it == order.end()) {
      problems << "\n  - unexpected tensor " << t.spec.name << " (from " << t.origin << ")";
      continue;
    }
    if (!seen.insert(t.spec.name).second) problems << "\n  - tensor " << t.spec.name << " appears twice";
    const auto& spec = specs[it->second];
    if (t.spec.shape != spec.shape) {
      auto fmt = [](const std::vector<uint64_t>& s) {
        std::string out = "[";
        for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
        return out + "]";
      };
      problems << "\n  - " << t.spec.name << " (from " << t.origin << ") has shape " << fmt(t.spec.shape)
               << ", the config needs " << fmt(spec.shape);
      continue;
    }
    const bool mx = is_mxfp4_role(spec.role);
    if (mx && t.dtype != DType::U8)
      problems << "\n  - " << t.spec.name << " must be U8 MXFP4 bytes, found " << dtype_name(t.dtype);
    if (!mx && !dtype_info(t.dtype).is_float)
      problems << "\n  - " << t.spec.name << " must hold real numbers, found " << dtype_name(t.dtype);
    const uint64_t needed = dtype_byte_size(t.dtype, checked_product(t.spec.shape).value_or(0)).value_or(0);
    if (needed == 0 || needed != t.source->size())
      problems << "\n  - " << t.spec.name << " holds " << t.source->size() << " bytes, " << dtype_name(t.dtype)
               << " of its shape needs " << needed;
  }
  for (const auto& s : specs)
    if (!seen.count(s.name)) problems << "\n  - missing tensor " << s.name;
  const std::string text = problems.str();
  if (!text.empty()) throw_format_error(source, "tensors", std::nullopt, "not a complete GPT-OSS model:" + text);
  std::sort(tensors.begin(), tensors.end(),
            [&](const CanonicalTensor& a, const CanonicalTensor& b) { return order[a.spec.name] < order[b.spec.name]; });
}

}  // namespace gptoss

#include "convert/canonical_model.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <stdexcept>

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

bool is_expert_matrix_role(TensorRole r) { return r == TensorRole::Mlp1Blocks || r == TensorRole::Mlp2Blocks; }

TensorRole expert_matrix_role(TensorRole r) {
  return r == TensorRole::Mlp1Blocks || r == TensorRole::Mlp1Scales ? TensorRole::Mlp1Blocks : TensorRole::Mlp2Blocks;
}
TensorRole expert_scales_role(TensorRole r) {
  return r == TensorRole::Mlp1Blocks || r == TensorRole::Mlp1Scales ? TensorRole::Mlp1Scales : TensorRole::Mlp2Scales;
}

bool holds_mxfp4(const CanonicalTensor& t) { return is_mxfp4_role(t.spec.role) && t.dtype == DType::U8; }

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

bool is_vector_role(TensorRole r) { return !is_matrix_role(r) && !is_mxfp4_role(r); }

std::vector<uint64_t> canonical_shape(const GptOssConfig& c, TensorRole role, DType experts) {
  const uint64_t V = c.vocab_size, H = c.hidden_size, I = c.intermediate_size, E = c.num_experts;
  const uint64_t Q = c.q_rows(), KV = c.kv_rows();
  if (experts != DType::U8) {  // expert matrices in another type: the matrix itself, no scales
    switch (role) {
      case TensorRole::Mlp1Blocks: return {E, 2 * I, H};
      case TensorRole::Mlp1Scales: return {E, 2 * I, 0};
      case TensorRole::Mlp2Blocks: return {E, H, I};
      case TensorRole::Mlp2Scales: return {E, H, 0};
      default: break;
    }
  }
  switch (role) {
    case TensorRole::Embedding: return {V, H};
    case TensorRole::Unembedding: return {V, H};
    case TensorRole::FinalNorm: return {H};
    case TensorRole::AttnNorm: return {H};
    case TensorRole::AttnQ: return {Q, H};
    case TensorRole::AttnQBias: return {Q};
    case TensorRole::AttnK: return {KV, H};
    case TensorRole::AttnKBias: return {KV};
    case TensorRole::AttnV: return {KV, H};
    case TensorRole::AttnVBias: return {KV};
    case TensorRole::AttnOut: return {H, Q};
    case TensorRole::AttnOutBias: return {H};
    case TensorRole::AttnSinks: return {c.num_heads};
    case TensorRole::MlpNorm: return {H};
    case TensorRole::RouterWeight: return {E, H};
    case TensorRole::RouterBias: return {E};
    case TensorRole::Mlp1Blocks: return {E, 2 * I, H / 32, 16};
    case TensorRole::Mlp1Scales: return {E, 2 * I, H / 32};
    case TensorRole::Mlp1Bias: return {E, 2 * I};
    case TensorRole::Mlp2Blocks: return {E, H, I / 32, 16};
    case TensorRole::Mlp2Scales: return {E, H, I / 32};
    case TensorRole::Mlp2Bias: return {E, H};
  }
  return {};
}

std::vector<TensorSpec> canonical_tensor_specs(const GptOssConfig& c) {
  std::vector<TensorSpec> specs;
  for_each_tensor(c.num_layers, [&](TensorRole role, int layer) {
    specs.push_back({role, layer, canonical_name(role, layer), canonical_shape(c, role)});
  });
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

CanonicalModel with_mxfp4_experts(const CanonicalModel& model, std::vector<LossyStep>& lossy) {
  CanonicalModel out = model;
  for (auto& t : out.tensors) {
    if (!is_expert_matrix_role(t.spec.role) || holds_mxfp4(t)) continue;
    auto stats = std::make_shared<ConversionStats>();
    lossy.push_back({t.spec.name, t.dtype, DType::MXFP4, stats});
    const auto pair = quantize_mxfp4_pair(t.source, t.dtype, t.spec.shape.back(), stats);
    const std::string origin = t.origin + " requantized to MXFP4";
    for (auto& s : out.tensors)
      if (s.spec.role == expert_scales_role(t.spec.role) && s.spec.layer == t.spec.layer)
        s = {{s.spec.role, s.spec.layer, s.spec.name, canonical_shape(model.config, s.spec.role)}, DType::U8, pair.scales, origin};
    t = {{t.spec.role, t.spec.layer, t.spec.name, canonical_shape(model.config, t.spec.role)}, DType::U8, pair.blocks, origin};
  }
  return out;
}

void finalize_canonical_tensors(const GptOssConfig& config, std::vector<CanonicalTensor>& tensors,
                                const std::string& source) {
  const auto specs = canonical_tensor_specs(config);
  std::map<std::string, size_t> order;
  for (size_t i = 0; i < specs.size(); ++i) order[specs[i].name] = i;
  // The form of each layer's expert matrices, from their *Blocks tensors (the pair's shapes follow
  // it): a type with a decoder other than ggml's MXFP4 layout (which readers repack into the
  // pair); any other type is checked as the pair's bytes.
  std::map<std::pair<TensorRole, int>, DType> expert_form;
  for (const auto& t : tensors)
    if (is_expert_matrix_role(t.spec.role) && dtype_info(t.dtype).decode && t.dtype != DType::MXFP4)
      expert_form[{t.spec.role, t.spec.layer}] = t.dtype;
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
    DType form = DType::U8;
    if (is_mxfp4_role(spec.role)) {
      const TensorRole matrix = expert_matrix_role(spec.role);
      if (auto f = expert_form.find({matrix, spec.layer}); f != expert_form.end()) form = f->second;
    }
    const auto expected = canonical_shape(config, spec.role, form);
    if (t.spec.shape != expected) {
      auto fmt = [](const std::vector<uint64_t>& s) {
        std::string out = "[";
        for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
        return out + "]";
      };
      problems << "\n  - " << t.spec.name << " (from " << t.origin << ") has shape " << fmt(t.spec.shape)
               << ", the config needs " << fmt(expected);
      continue;
    }
    // The MXFP4 pair and the other form's empty scales are U8.
    const bool pair_bytes = is_mxfp4_role(spec.role) && (form == DType::U8 || !is_expert_matrix_role(spec.role));
    if (pair_bytes && t.dtype != DType::U8)
      problems << "\n  - " << t.spec.name << " must be U8 MXFP4 bytes, found " << dtype_name(t.dtype);
    if (!pair_bytes && !dtype_info(t.dtype).is_float)
      problems << "\n  - " << t.spec.name << " must hold real numbers, found " << dtype_name(t.dtype);
    const uint64_t elements = checked_product(t.spec.shape).value_or(0);
    const uint64_t needed = dtype_byte_size(t.dtype, elements).value_or(0);
    if ((needed == 0 && elements != 0) || needed != t.source->size())
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

#include "convert/gptoss_config.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "formats/core/error.h"
#include "formats/core/json_file.h"
#include "formats/core/json_value.h"

namespace gptoss {
namespace {
using json = nlohmann::json;

// gpt-oss's values, for keys a config.json leaves out.
const GptOssConfig kDefaults;

// "eos_token_id": 200002 or, as in generation_config.json, [200002, 199999, 200012] (the first counts).
std::optional<uint32_t> first_token_id(const JsonValue& config, std::string_view key) {
  const auto v = config.find(key);
  if (!v) return std::nullopt;
  if (v->is_array() && v->size() > 0) return v->elements().front().as_u32();
  return v->as_u32();
}

std::vector<bool> default_layer_types(uint32_t layers) {
  std::vector<bool> out(std::min(layers, kMaxConfigLayers));  // validate() reports a larger count
  for (size_t i = 0; i < out.size(); ++i) out[i] = i % 2 == 0;  // even layers slide, as in gpt-oss
  return out;
}
}  // namespace

void GptOssConfig::validate(const std::string& source) const {
  std::ostringstream problems;
  auto need = [&](bool ok, const std::string& what) {
    if (!ok) problems << "\n  - " << what;
  };
  need(num_layers > 0, "num_hidden_layers must be > 0");
  need(num_layers <= kMaxConfigLayers, "num_hidden_layers must be at most " + std::to_string(kMaxConfigLayers));
  need(num_experts <= kMaxConfigExperts, "num_local_experts must be at most " + std::to_string(kMaxConfigExperts));
  need(hidden_size <= kMaxConfigWidth && intermediate_size <= kMaxConfigWidth && head_dim <= kMaxConfigWidth &&
           num_heads <= kMaxConfigWidth && num_kv_heads <= kMaxConfigWidth,
       "hidden_size, intermediate_size, head_dim and head counts must be at most " + std::to_string(kMaxConfigWidth));
  need(vocab_size <= kMaxConfigVocab, "vocab_size must be at most " + std::to_string(kMaxConfigVocab));
  need(hidden_size > 0 && hidden_size % 32 == 0, "hidden_size must be a positive multiple of 32 (MXFP4 blocks)");
  need(intermediate_size > 0 && intermediate_size % 32 == 0,
       "intermediate_size must be a positive multiple of 32 (MXFP4 blocks)");
  need(num_heads > 0 && num_kv_heads > 0, "head counts must be > 0");
  need(num_kv_heads == 0 || num_heads % num_kv_heads == 0,
       "num_attention_heads must be a multiple of num_key_value_heads");
  need(head_dim > 0 && head_dim % 2 == 0, "head_dim must be even (RoPE rotates pairs)");
  need(num_experts > 0, "num_local_experts must be > 0");
  need(experts_per_token > 0 && experts_per_token <= num_experts,
       "num_experts_per_tok must be between 1 and num_local_experts");
  need(vocab_size > 0, "vocab_size must be > 0");
  need(sliding_layers.size() == num_layers, "layer_types must have one entry per layer");
  need(rms_norm_eps > 0, "rms_norm_eps must be > 0");
  need(rope_theta > 1, "rope_theta must be > 1");
  need(rope_scaling_factor >= 1, "rope scaling factor must be >= 1");
  need(rope_original_context > 0, "original context length must be > 0");
  need(yarn_beta_fast > yarn_beta_slow && yarn_beta_slow > 0, "YaRN needs beta_fast > beta_slow > 0");
  need(swiglu_limit > 0, "swiglu_limit must be > 0");
  bool any_sliding = false;
  for (bool s : sliding_layers) any_sliding |= s;
  need(!any_sliding || sliding_window > 0, "sliding layers need sliding_window > 0");
  for (auto id : {bos_token_id, eos_token_id, pad_token_id})
    need(!id || *id < vocab_size, "special token id " + std::to_string(id.value_or(0)) + " is outside the vocabulary");
  const std::string text = problems.str();
  if (!text.empty()) throw_format_error(source, "config", std::nullopt, "invalid GPT-OSS config:" + text);
}

YarnParams compute_yarn(const GptOssConfig& c) {
  YarnParams y;
  const double d = c.head_dim;
  auto corr = [&](double rotations) {
    return d * std::log(c.rope_original_context / (rotations * 2 * std::numbers::pi)) / (2 * std::log(c.rope_theta));
  };
  y.low = corr(c.yarn_beta_fast);
  y.high = corr(c.yarn_beta_slow);
  if (c.yarn_truncate) {
    y.low = std::floor(y.low);
    y.high = std::ceil(y.high);
  }
  y.low = std::max(y.low, 0.0);
  y.high = std::min(y.high, d - 1);
  y.concentration = c.rope_scaling_factor > 1 ? 0.1 * std::log(c.rope_scaling_factor) + 1.0 : 1.0;
  const uint32_t half = c.head_dim / 2;
  y.inv_freq.resize(half);
  const float low = static_cast<float>(y.low);
  const float high = static_cast<float>(y.high == y.low ? y.high + 0.001 : y.high);
  for (uint32_t i = 0; i < half; ++i) {
    // transformers: pos_freqs = base ** (arange(0, dim, 2) / dim) in fp32.
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(c.head_dim);
    const float pos_freq = std::pow(static_cast<float>(c.rope_theta), exponent);
    const float extrapolation = 1.0f / pos_freq;
    const float interpolation = 1.0f / (static_cast<float>(c.rope_scaling_factor) * pos_freq);
    float ramp = (static_cast<float>(i) - low) / (high - low);
    ramp = std::clamp(ramp, 0.0f, 1.0f);
    const float extrapolation_factor = 1.0f - ramp;
    y.inv_freq[i] = interpolation * (1.0f - extrapolation_factor) + extrapolation * extrapolation_factor;
  }
  return y;
}

GptOssConfig config_from_hf_json(const json& j, const std::string& source) {
  const JsonValue root(j, source);
  if (!root.is_object()) root.fail_expected("a JSON object (config.json)");
  if (const auto type = root.find("model_type"); type && type->as_string() != "gpt_oss")
    type->fail("expected \"gpt_oss\", found " + json_quoted(type->as_string()));
  GptOssConfig c;
  c.num_layers = root.get<uint32_t>("num_hidden_layers");
  c.hidden_size = root.get<uint32_t>("hidden_size");
  c.intermediate_size = root.get<uint32_t>("intermediate_size");
  c.num_heads = root.get<uint32_t>("num_attention_heads");
  c.num_kv_heads = root.get<uint32_t>("num_key_value_heads");
  c.head_dim = root.get_or<uint32_t>("head_dim", c.num_heads ? c.hidden_size / c.num_heads : 0);
  c.num_experts = root.get<uint32_t>("num_local_experts");
  constexpr uint32_t kGptOssExpertsPerToken = 4;
  c.experts_per_token =
      root.get_or<uint32_t>("num_experts_per_tok", root.get_or<uint32_t>("experts_per_token", kGptOssExpertsPerToken));
  c.vocab_size = root.get<uint32_t>("vocab_size");
  c.sliding_window = root.get_or<uint32_t>("sliding_window", 0u);
  c.rms_norm_eps = root.get_or<double>("rms_norm_eps", kDefaults.rms_norm_eps);
  c.max_position_embeddings =
      root.get_or<uint32_t>("max_position_embeddings", static_cast<uint32_t>(kDefaults.max_position_embeddings));
  c.swiglu_limit = root.get_or<double>("swiglu_limit", kDefaults.swiglu_limit);

  // RoPE: the hub form (rope_theta + rope_scaling) or the transformers 5.x form (rope_parameters
  // with rope_theta inside).
  std::optional<JsonValue> rope = root.find("rope_parameters");
  if (!rope) rope = root.find("rope_scaling");
  if (rope && !rope->is_object()) rope->fail_expected("an object");
  c.rope_theta = root.get_or<double>("rope_theta", rope ? rope->get_or<double>("rope_theta", kDefaults.rope_theta)
                                                          : kDefaults.rope_theta);
  const uint32_t initial_context = root.get_or<uint32_t>("initial_context_length", kDefaults.rope_original_context);
  if (rope) {
    auto type = rope->find("rope_type");
    if (!type) type = rope->find("type");
    if (type && type->as_string() != "yarn") type->fail("GPT-OSS uses yarn, found " + json_quoted(type->as_string()));
    c.rope_scaling_factor = rope->get_or<double>("factor", kDefaults.rope_scaling_factor);
    c.yarn_beta_fast = rope->get_or<double>("beta_fast", kDefaults.yarn_beta_fast);
    c.yarn_beta_slow = rope->get_or<double>("beta_slow", kDefaults.yarn_beta_slow);
    c.rope_original_context = rope->get_or<uint32_t>("original_max_position_embeddings", initial_context);
    // transformers reads a missing `truncate` as true; OpenAI's formula is truncate=false.
    c.yarn_truncate = rope->get_or<bool>("truncate", true);
  } else {
    c.rope_original_context = initial_context;
  }

  if (const auto layer_types = root.find("layer_types")) {
    if (!layer_types->is_array()) layer_types->fail_expected("an array of layer types");
    if (layer_types->size() > kMaxConfigLayers)
      layer_types->fail("more than " + std::to_string(kMaxConfigLayers) + " layers");
    for (const JsonValue& type : layer_types->elements()) {
      const std::string& name = type.as_string();
      if (name == "sliding_attention") c.sliding_layers.push_back(true);
      else if (name == "full_attention") c.sliding_layers.push_back(false);
      else
        layer_types->fail("unknown layer type " + json_quoted(name) + " (layer " +
                          std::to_string(c.sliding_layers.size()) + "; expected sliding_attention or full_attention)");
    }
  } else {
    c.sliding_layers = default_layer_types(c.num_layers);
  }
  c.bos_token_id = first_token_id(root, "bos_token_id");
  c.eos_token_id = first_token_id(root, "eos_token_id");
  c.pad_token_id = first_token_id(root, "pad_token_id");
  c.validate(source);
  return c;
}

GptOssConfig config_from_original_json(const json& j, const std::string& source) {
  const JsonValue root(j, source);
  if (!root.is_object()) root.fail_expected("a JSON object (config.json)");
  GptOssConfig c;
  c.num_layers = root.get<uint32_t>("num_hidden_layers");
  c.num_experts = root.get<uint32_t>("num_experts");
  c.experts_per_token = root.get<uint32_t>("experts_per_token");
  c.vocab_size = root.get<uint32_t>("vocab_size");
  c.hidden_size = root.get<uint32_t>("hidden_size");
  c.intermediate_size = root.get<uint32_t>("intermediate_size");
  c.swiglu_limit = root.get_or<double>("swiglu_limit", kDefaults.swiglu_limit);
  c.head_dim = root.get<uint32_t>("head_dim");
  c.num_heads = root.get<uint32_t>("num_attention_heads");
  c.num_kv_heads = root.get<uint32_t>("num_key_value_heads");
  c.sliding_window = root.get<uint32_t>("sliding_window");
  c.rope_original_context = root.get<uint32_t>("initial_context_length");
  c.rope_theta = root.get<double>("rope_theta");
  c.rope_scaling_factor = root.get_or<double>("rope_scaling_factor", 1.0);  // OpenAI's code: absent = no scaling
  c.yarn_beta_slow = root.get_or<double>("rope_ntk_alpha", kDefaults.yarn_beta_slow);
  c.yarn_beta_fast = root.get_or<double>("rope_ntk_beta", kDefaults.yarn_beta_fast);
  c.yarn_truncate = false;
  // The context OpenAI's code allows; compared in double first, since converting a product past
  // the integer range (a factor of 1e300, or a negative one) is undefined behaviour.
  const double context = static_cast<double>(c.rope_original_context) * c.rope_scaling_factor;
  if (!(context >= 0 && context <= UINT32_MAX)) {
    std::ostringstream text;
    text << "initial_context_length x rope_scaling_factor = " << context << " is not a context length (0 to 2^32 - 1)";
    root.at("rope_scaling_factor").fail(text.str());
  }
  c.max_position_embeddings = static_cast<uint64_t>(context);
  c.sliding_layers = default_layer_types(c.num_layers);  // the OpenAI model slides on even layers
  c.rms_norm_eps = kDefaults.rms_norm_eps;               // hard-coded in the OpenAI reference
  c.validate(source);
  return c;
}

GptOssConfig load_config_file(const std::string& path) {
  const json j = read_json_file(path);
  if (j.is_object() && j.contains("num_experts") && !j.contains("num_local_experts"))
    return config_from_original_json(j, path);
  return config_from_hf_json(j, path);
}

namespace {
// The files' key order and constant keys; the visitor fills in the nulls, keeping each key's place.
const nlohmann::ordered_json& hf_config_template() {
  static const auto t = nlohmann::ordered_json::parse(R"({
    "architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss",
    "hidden_size": null, "intermediate_size": null, "num_hidden_layers": null, "num_attention_heads": null,
    "num_key_value_heads": null, "head_dim": null, "num_local_experts": null, "num_experts_per_tok": null,
    "experts_per_token": null, "vocab_size": null, "rms_norm_eps": null, "rope_theta": null,
    "rope_scaling": {"rope_type": "yarn", "factor": null, "beta_fast": null, "beta_slow": null,
                     "original_max_position_embeddings": null, "truncate": null},
    "initial_context_length": null, "max_position_embeddings": null, "sliding_window": null, "layer_types": null,
    "swiglu_limit": null, "attention_bias": true, "attention_dropout": 0.0, "hidden_act": "silu",
    "tie_word_embeddings": false, "bos_token_id": null, "eos_token_id": null, "pad_token_id": null,
    "initializer_range": 0.02, "router_aux_loss_coef": 0.9, "output_router_logits": false, "use_cache": true,
    "torch_dtype": "bfloat16",
    "quantization_config": {"quant_method": "mxfp4", "modules_to_not_convert": [
      "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}})");
  return t;
}

const nlohmann::ordered_json& original_config_template() {
  static const auto t = nlohmann::ordered_json::parse(R"({
    "num_hidden_layers": null, "num_experts": null, "experts_per_token": null, "vocab_size": null,
    "hidden_size": null, "intermediate_size": null, "swiglu_limit": null, "head_dim": null,
    "num_attention_heads": null, "num_key_value_heads": null, "sliding_window": null,
    "initial_context_length": null, "rope_theta": null, "rope_scaling_factor": null, "rope_ntk_alpha": null,
    "rope_ntk_beta": null})");
  return t;
}

enum class ConfigLayout { HuggingFace, Original };

// Writes each field under its key(s) of `layout`: a new key goes after the template's keys, an
// absent token id is left out, layer_types is written as names.
class ConfigJsonWriter {
 public:
  ConfigJsonWriter(nlohmann::ordered_json& out, ConfigLayout layout) : out_(out), layout_(layout) {}

  template <typename T>
  void operator()(const ConfigField& field, const T& value) const {
    if (layout_ == ConfigLayout::Original) {
      if (!field.original_key.empty()) put(field.original_key, value);
      return;
    }
    put(field.name, value);
    if (!field.hf_alias.empty()) put(field.hf_alias, value);
  }

 private:
  template <typename T>
  void put(std::string_view key, const T& value) const {
    std::string pointer = "/" + std::string(key);
    std::replace(pointer.begin(), pointer.end(), '.', '/');
    const nlohmann::ordered_json::json_pointer at(pointer);
    if constexpr (std::is_same_v<T, std::optional<uint32_t>>) {
      if (!value) {
        out_[at.parent_pointer()].erase(at.back());
        return;
      }
      out_[at] = *value;
    } else if constexpr (std::is_same_v<T, std::vector<bool>>) {
      nlohmann::ordered_json types = nlohmann::ordered_json::array();
      for (bool sliding : value) types.push_back(sliding ? "sliding_attention" : "full_attention");
      out_[at] = std::move(types);
    } else {
      out_[at] = value;
    }
  }

  nlohmann::ordered_json& out_;
  ConfigLayout layout_;
};

// A template key that no field filled would be written as null: a field list and a template that
// disagree are a bug here, not in the input.
void require_filled(const nlohmann::ordered_json& j, const std::string& where) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it->is_null()) throw std::logic_error("config.json writer: no config field fills \"" + where + it.key() + "\"");
    if (it->is_object()) require_filled(*it, where + it.key() + ".");
  }
}

nlohmann::ordered_json config_json(const GptOssConfig& c, ConfigLayout layout) {
  nlohmann::ordered_json j = layout == ConfigLayout::HuggingFace ? hf_config_template() : original_config_template();
  for_each_config_field(ConfigJsonWriter(j, layout), c);
  require_filled(j, "");
  return j;
}
}  // namespace

nlohmann::ordered_json config_to_hf_json(const GptOssConfig& c) { return config_json(c, ConfigLayout::HuggingFace); }

nlohmann::ordered_json config_to_original_json(const GptOssConfig& c) {
  // OpenAI's config has no layer_types: its model slides on the even layers, always.
  for (uint32_t l = 0; l < c.num_layers; ++l)
    if (c.is_sliding(l) != (l % 2 == 0))
      throw std::invalid_argument("the original layout's config.json has no layer_types (OpenAI's model slides the even "
                                  "layers only), but this model's layer " + std::to_string(l) + " differs");
  return config_json(c, ConfigLayout::Original);
}

}  // namespace gptoss

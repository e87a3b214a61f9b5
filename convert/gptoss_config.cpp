#include "convert/gptoss_config.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "formats/core/error.h"
#include "formats/core/json_file.h"

namespace gptoss {
namespace {
using json = nlohmann::json;

uint32_t get_u32(const json& j, const char* key, const std::string& source, std::optional<uint32_t> fallback = {}) {
  if (!j.contains(key) || j[key].is_null()) {
    if (fallback) return *fallback;
    throw_format_error(source, key, std::nullopt, "required key is missing");
  }
  const json& v = j[key];
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > UINT32_MAX)
    throw_format_error(source, key, std::nullopt, "must be a non-negative 32-bit integer, found " + v.dump());
  return v.get<uint32_t>();
}

double get_f64(const json& j, const char* key, const std::string& source, std::optional<double> fallback = {}) {
  if (!j.contains(key) || j[key].is_null()) {
    if (fallback) return *fallback;
    throw_format_error(source, key, std::nullopt, "required key is missing");
  }
  const json& v = j[key];
  if (!v.is_number()) throw_format_error(source, key, std::nullopt, "must be a number, found " + v.dump());
  return v.get<double>();
}

std::optional<uint32_t> first_token_id(const json& j, const char* key, const std::string& source) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  const json& v = j[key].is_array() && !j[key].empty() ? j[key][0] : j[key];
  if (!v.is_number_unsigned() || v.get<uint64_t>() > UINT32_MAX)  // get<uint32_t> would wrap 2^40 to 0
    throw_format_error(source, key, std::nullopt, "must be a token id, found " + v.dump());
  return v.get<uint32_t>();
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
  if (!j.is_object()) throw_format_error(source, "", std::nullopt, "config must be a JSON object");
  if (j.contains("model_type") && j["model_type"] != "gpt_oss")
    throw_format_error(source, "model_type", std::nullopt, "expected \"gpt_oss\", found " + j["model_type"].dump());
  GptOssConfig c;
  c.num_layers = get_u32(j, "num_hidden_layers", source);
  c.hidden_size = get_u32(j, "hidden_size", source);
  c.intermediate_size = get_u32(j, "intermediate_size", source);
  c.num_heads = get_u32(j, "num_attention_heads", source);
  c.num_kv_heads = get_u32(j, "num_key_value_heads", source);
  c.head_dim = get_u32(j, "head_dim", source, c.num_heads ? c.hidden_size / c.num_heads : 0);
  c.num_experts = get_u32(j, "num_local_experts", source);
  c.experts_per_token = get_u32(j, "num_experts_per_tok", source, get_u32(j, "experts_per_token", source, 4u));
  c.vocab_size = get_u32(j, "vocab_size", source);
  c.sliding_window = get_u32(j, "sliding_window", source, 0u);
  c.rms_norm_eps = get_f64(j, "rms_norm_eps", source, 1e-5);
  c.max_position_embeddings = get_u32(j, "max_position_embeddings", source, 131072u);
  c.swiglu_limit = get_f64(j, "swiglu_limit", source, 7.0);

  // RoPE: the hub form (rope_theta + rope_scaling) or the transformers 5.x form (rope_parameters
  // with rope_theta inside).
  const json* rope = nullptr;
  if (j.contains("rope_parameters") && j["rope_parameters"].is_object()) rope = &j["rope_parameters"];
  else if (j.contains("rope_scaling") && j["rope_scaling"].is_object()) rope = &j["rope_scaling"];
  c.rope_theta = get_f64(j, "rope_theta", source, rope ? get_f64(*rope, "rope_theta", source, 150000.0) : 150000.0);
  if (rope) {
    const std::string type = rope->value("rope_type", rope->value("type", std::string("yarn")));
    if (type != "yarn")
      throw_format_error(source, "rope_scaling.rope_type", std::nullopt, "GPT-OSS uses yarn, found \"" + type + "\"");
    c.rope_scaling_factor = get_f64(*rope, "factor", source, 32.0);
    c.yarn_beta_fast = get_f64(*rope, "beta_fast", source, 32.0);
    c.yarn_beta_slow = get_f64(*rope, "beta_slow", source, 1.0);
    c.rope_original_context = get_u32(*rope, "original_max_position_embeddings", source,
                                      get_u32(j, "initial_context_length", source, 4096u));
    // transformers reads a missing `truncate` as true; OpenAI's formula is truncate=false.
    if (rope->contains("truncate")) {
      if (!(*rope)["truncate"].is_boolean())
        throw_format_error(source, "rope_scaling.truncate", std::nullopt, "must be true or false");
      c.yarn_truncate = (*rope)["truncate"].get<bool>();
    } else {
      c.yarn_truncate = true;
    }
  } else {
    c.rope_original_context = get_u32(j, "initial_context_length", source, 4096u);
  }

  if (j.contains("layer_types")) {
    const json& lt = j["layer_types"];
    if (!lt.is_array()) throw_format_error(source, "layer_types", std::nullopt, "must be an array of strings");
    if (lt.size() > kMaxConfigLayers)
      throw_format_error(source, "layer_types", std::nullopt, "more than " + std::to_string(kMaxConfigLayers) + " layers");
    for (const auto& v : lt) {
      if (v == "sliding_attention") c.sliding_layers.push_back(true);
      else if (v == "full_attention") c.sliding_layers.push_back(false);
      else throw_format_error(source, "layer_types", std::nullopt, "unknown layer type " + v.dump());
    }
  } else {
    c.sliding_layers = default_layer_types(c.num_layers);
  }
  c.bos_token_id = first_token_id(j, "bos_token_id", source);
  c.eos_token_id = first_token_id(j, "eos_token_id", source);
  c.pad_token_id = first_token_id(j, "pad_token_id", source);
  c.validate(source);
  return c;
}

GptOssConfig config_from_original_json(const json& j, const std::string& source) {
  if (!j.is_object()) throw_format_error(source, "", std::nullopt, "config must be a JSON object");
  GptOssConfig c;
  c.num_layers = get_u32(j, "num_hidden_layers", source);
  c.num_experts = get_u32(j, "num_experts", source);
  c.experts_per_token = get_u32(j, "experts_per_token", source);
  c.vocab_size = get_u32(j, "vocab_size", source);
  c.hidden_size = get_u32(j, "hidden_size", source);
  c.intermediate_size = get_u32(j, "intermediate_size", source);
  c.swiglu_limit = get_f64(j, "swiglu_limit", source, 7.0);
  c.head_dim = get_u32(j, "head_dim", source);
  c.num_heads = get_u32(j, "num_attention_heads", source);
  c.num_kv_heads = get_u32(j, "num_key_value_heads", source);
  c.sliding_window = get_u32(j, "sliding_window", source);
  c.rope_original_context = get_u32(j, "initial_context_length", source);
  c.rope_theta = get_f64(j, "rope_theta", source);
  c.rope_scaling_factor = get_f64(j, "rope_scaling_factor", source, 1.0);
  c.yarn_beta_slow = get_f64(j, "rope_ntk_alpha", source, 1.0);
  c.yarn_beta_fast = get_f64(j, "rope_ntk_beta", source, 32.0);
  c.yarn_truncate = false;
  c.max_position_embeddings =
      static_cast<uint64_t>(static_cast<double>(c.rope_original_context) * c.rope_scaling_factor);
  c.sliding_layers = default_layer_types(c.num_layers);  // the OpenAI model slides on even layers
  c.rms_norm_eps = 1e-5;                                  // hard-coded in the OpenAI reference
  c.validate(source);
  return c;
}

GptOssConfig load_config_file(const std::string& path) {
  const json j = read_json_file(path);
  try {
    if (j.is_object() && j.contains("num_experts") && !j.contains("num_local_experts"))
      return config_from_original_json(j, path);
    return config_from_hf_json(j, path);
  } catch (const json::exception& e) {  // a value of the wrong JSON type deep inside
    throw_format_error(path, "", std::nullopt, std::string("unexpected JSON value: ") + e.what());
  }
}

nlohmann::ordered_json config_to_hf_json(const GptOssConfig& c) {
  nlohmann::ordered_json j;
  j["architectures"] = {"GptOssForCausalLM"};
  j["model_type"] = "gpt_oss";
  j["hidden_size"] = c.hidden_size;
  j["intermediate_size"] = c.intermediate_size;
  j["num_hidden_layers"] = c.num_layers;
  j["num_attention_heads"] = c.num_heads;
  j["num_key_value_heads"] = c.num_kv_heads;
  j["head_dim"] = c.head_dim;
  j["num_local_experts"] = c.num_experts;
  j["num_experts_per_tok"] = c.experts_per_token;
  j["experts_per_token"] = c.experts_per_token;
  j["vocab_size"] = c.vocab_size;
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["rope_theta"] = c.rope_theta;
  j["rope_scaling"] = {{"rope_type", "yarn"},
                       {"factor", c.rope_scaling_factor},
                       {"beta_fast", c.yarn_beta_fast},
                       {"beta_slow", c.yarn_beta_slow},
                       {"original_max_position_embeddings", c.rope_original_context},
                       {"truncate", c.yarn_truncate}};
  j["initial_context_length"] = c.rope_original_context;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["sliding_window"] = c.sliding_window;
  nlohmann::ordered_json types = nlohmann::ordered_json::array();
  for (bool s : c.sliding_layers) types.push_back(s ? "sliding_attention" : "full_attention");
  j["layer_types"] = types;
  j["swiglu_limit"] = c.swiglu_limit;
  j["attention_bias"] = true;
  j["attention_dropout"] = 0.0;
  j["hidden_act"] = "silu";
  j["tie_word_embeddings"] = false;
  if (c.bos_token_id) j["bos_token_id"] = *c.bos_token_id;
  if (c.eos_token_id) j["eos_token_id"] = *c.eos_token_id;
  if (c.pad_token_id) j["pad_token_id"] = *c.pad_token_id;
  j["initializer_range"] = 0.02;
  j["router_aux_loss_coef"] = 0.9;
  j["output_router_logits"] = false;
  j["use_cache"] = true;
  j["torch_dtype"] = "bfloat16";
  j["quantization_config"] = {{"quant_method", "mxfp4"},
                              {"modules_to_not_convert",
                               {"model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens",
                                "lm_head"}}};
  return j;
}

nlohmann::ordered_json config_to_original_json(const GptOssConfig& c) {
  // OpenAI's config has no layer_types: its model slides on the even layers, always.
  for (uint32_t l = 0; l < c.num_layers; ++l)
    if (c.is_sliding(l) != (l % 2 == 0))
      throw std::invalid_argument("the original layout's config.json has no layer_types (OpenAI's model slides the even "
                                  "layers only), but this model's layer " + std::to_string(l) + " differs");
  nlohmann::ordered_json j;
  j["num_hidden_layers"] = c.num_layers;
  j["num_experts"] = c.num_experts;
  j["experts_per_token"] = c.experts_per_token;
  j["vocab_size"] = c.vocab_size;
  j["hidden_size"] = c.hidden_size;
  j["intermediate_size"] = c.intermediate_size;
  j["swiglu_limit"] = c.swiglu_limit;
  j["head_dim"] = c.head_dim;
  j["num_attention_heads"] = c.num_heads;
  j["num_key_value_heads"] = c.num_kv_heads;
  j["sliding_window"] = c.sliding_window;
  j["initial_context_length"] = c.rope_original_context;
  j["rope_theta"] = c.rope_theta;
  j["rope_scaling_factor"] = c.rope_scaling_factor;
  j["rope_ntk_alpha"] = c.yarn_beta_slow;
  j["rope_ntk_beta"] = c.yarn_beta_fast;
  return j;
}

}  // namespace gptoss

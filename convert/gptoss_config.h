#pragma once
// Every hyper-parameter the GPT-OSS math needs, in one validated struct, read from either
// checkpoint layout's config.json and written back to both.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace gptoss {

// The counts and sizes start at 0 and the special token ids absent (a file must give them); every
// other default is gpt-oss-20b's and gpt-oss-120b's published value, which the readers take for
// an absent key and the synthesizer keeps. Each field is listed once more, in
// for_each_config_field below, which everything that must see every field iterates.
struct GptOssConfig {
  uint32_t num_layers = 0;
  uint32_t hidden_size = 0;
  uint32_t intermediate_size = 0;  // per expert
  uint32_t num_heads = 0;
  uint32_t num_kv_heads = 0;
  uint32_t head_dim = 0;
  uint32_t num_experts = 0;
  uint32_t experts_per_token = 0;
  uint32_t vocab_size = 0;
  uint32_t sliding_window = 0;
  std::vector<bool> sliding_layers;  // per layer: true = sliding-window attention
  double rms_norm_eps = 1e-5;
  double rope_theta = 150000.0;
  double rope_scaling_factor = 32.0;         // YaRN factor
  uint32_t rope_original_context = 4096;     // original_max_position_embeddings / initial_context_length
  double yarn_beta_fast = 32.0;              // OpenAI rope_ntk_beta
  double yarn_beta_slow = 1.0;               // OpenAI rope_ntk_alpha
  bool yarn_truncate = false;
  uint64_t max_position_embeddings = 131072;
  double swiglu_limit = 7.0;
  std::optional<uint32_t> bos_token_id;
  std::optional<uint32_t> eos_token_id;
  std::optional<uint32_t> pad_token_id;

  uint32_t q_rows() const { return num_heads * head_dim; }
  uint32_t kv_rows() const { return num_kv_heads * head_dim; }
  uint32_t heads_per_kv() const { return num_heads / num_kv_heads; }
  // GQA: query head h reads kv head h / (heads / kv_heads); never h % kv_heads.
  uint32_t kv_head_for(uint32_t head) const { return head / heads_per_kv(); }
  bool is_sliding(uint32_t layer) const { return layer < sliding_layers.size() && sliding_layers[layer]; }

  // Throws one FormatError naming `source` (field "config") that lists every problem found:
  // zero or odd sizes, counts that do not divide, values past the caps below, a layer_types
  // length other than num_layers, special token ids outside the vocabulary.
  void validate(const std::string& source) const;
  bool operator==(const GptOssConfig&) const = default;
};

// How compare_config (verify) weighs a difference in a field.
enum class ConfigCompare {
  Exact,        // a difference in the math
  F32Rounding,  // some formats store it as f32: equal within 1e-6 relative
  Note,         // not every format stores it, or the tensors show it already: reported, not a difference
};

// One field of GptOssConfig as the config files name it.
struct ConfigField {
  std::string_view name;          // the key path in a Hugging Face config.json ("rope_scaling.factor")
  std::string_view hf_alias;      // a second key the Hugging Face config.json also carries, or ""
  std::string_view original_key;  // the key in OpenAI's original config.json, or "" where that layout implies the value
  ConfigCompare compare;
  std::string_view note = {};     // for ConfigCompare::Note: why the difference is only a note
};

// Calls visit(field, config.member...) for every field of GptOssConfig, in declaration order,
// with one config (writers) or several at once (visit(field, a.x, b.x) compares two). A member
// added to GptOssConfig goes here too: the JSON writers, verify's compare_config and the config
// tests all iterate this list (tests/convert/config_fields_test.cpp fails until it does).
template <typename Visitor, typename... Configs>
  requires(sizeof...(Configs) > 0 && (std::is_same_v<std::remove_const_t<Configs>, GptOssConfig> && ...))
void for_each_config_field(Visitor&& visit, Configs&... c) {
  using enum ConfigCompare;
  constexpr std::string_view kNotStoredEverywhere = "not every format stores it";
  visit(ConfigField{"num_hidden_layers", "", "num_hidden_layers", Exact}, c.num_layers...);
  visit(ConfigField{"hidden_size", "", "hidden_size", Exact}, c.hidden_size...);
  visit(ConfigField{"intermediate_size", "", "intermediate_size", Exact}, c.intermediate_size...);
  visit(ConfigField{"num_attention_heads", "", "num_attention_heads", Exact}, c.num_heads...);
  visit(ConfigField{"num_key_value_heads", "", "num_key_value_heads", Exact}, c.num_kv_heads...);
  visit(ConfigField{"head_dim", "", "head_dim", Exact}, c.head_dim...);
  visit(ConfigField{"num_local_experts", "", "num_experts", Exact}, c.num_experts...);
  visit(ConfigField{"num_experts_per_tok", "experts_per_token", "experts_per_token", Exact}, c.experts_per_token...);
  visit(ConfigField{"vocab_size", "", "vocab_size", Note, "rows beyond the smaller vocabulary are compared as dropped"},
        c.vocab_size...);
  visit(ConfigField{"sliding_window", "", "sliding_window", Exact}, c.sliding_window...);
  visit(ConfigField{"layer_types", "", "", Exact}, c.sliding_layers...);
  visit(ConfigField{"rms_norm_eps", "", "", F32Rounding}, c.rms_norm_eps...);
  visit(ConfigField{"rope_theta", "", "rope_theta", Exact}, c.rope_theta...);
  visit(ConfigField{"rope_scaling.factor", "", "rope_scaling_factor", Exact}, c.rope_scaling_factor...);
  visit(ConfigField{"rope_scaling.original_max_position_embeddings", "initial_context_length", "initial_context_length",
                    Exact},
        c.rope_original_context...);
  visit(ConfigField{"rope_scaling.beta_fast", "", "rope_ntk_beta", F32Rounding}, c.yarn_beta_fast...);
  visit(ConfigField{"rope_scaling.beta_slow", "", "rope_ntk_alpha", F32Rounding}, c.yarn_beta_slow...);
  visit(ConfigField{"rope_scaling.truncate", "", "", Exact}, c.yarn_truncate...);
  visit(ConfigField{"max_position_embeddings", "", "", Note, kNotStoredEverywhere}, c.max_position_embeddings...);
  visit(ConfigField{"swiglu_limit", "", "swiglu_limit", Exact}, c.swiglu_limit...);
  visit(ConfigField{"bos_token_id", "", "", Note, kNotStoredEverywhere}, c.bos_token_id...);
  visit(ConfigField{"eos_token_id", "", "", Note, kNotStoredEverywhere}, c.eos_token_id...);
  visit(ConfigField{"pad_token_id", "", "", Note, kNotStoredEverywhere}, c.pad_token_id...);
}

// Caps on hyper-parameters read from files, far above any GPT-OSS model (36 layers, 128 experts,
// width 2880, 201088 tokens). validate() enforces them, and readers check the layer count before
// sizing anything by it, so a hostile header cannot make us allocate or loop without bound.
inline constexpr uint32_t kMaxConfigLayers = 1024;
inline constexpr uint32_t kMaxConfigExperts = 65536;
inline constexpr uint32_t kMaxConfigWidth = 1u << 20;  // hidden, intermediate, head_dim, heads
inline constexpr uint32_t kMaxConfigVocab = 1u << 24;

// YaRN numbers derived from the config, as transformers and OpenAI compute them.
struct YarnParams {
  double low = 0, high = 0;       // correction range in rotary-pair index space
  double concentration = 1;       // multiplies cos and sin (attention_scaling / mscale)
  std::vector<float> inv_freq;    // head_dim/2 frequencies, computed in fp32 like transformers
};
YarnParams compute_yarn(const GptOssConfig& config);

// Readers: every value goes through JsonValue (formats/core/json_value.h), so anything wrong is
// a FormatError naming `source` and the field path; nothing else escapes.
GptOssConfig config_from_hf_json(const nlohmann::json& json, const std::string& source);
GptOssConfig config_from_original_json(const nlohmann::json& json, const std::string& source);
GptOssConfig load_config_file(const std::string& path);  // detects the layout from the keys

// Writers: every field of for_each_config_field under its key (and alias), in the key order and
// with the constant keys transformers' and OpenAI's own files have.
nlohmann::ordered_json config_to_hf_json(const GptOssConfig& config);
// Throws std::invalid_argument for a layer pattern other than gpt-oss's (even layers slide),
// which OpenAI's config cannot say.
nlohmann::ordered_json config_to_original_json(const GptOssConfig& config);

}  // namespace gptoss

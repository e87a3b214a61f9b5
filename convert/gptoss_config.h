#pragma once
// Every hyper-parameter the GPT-OSS math needs, in one validated struct, read from either
// checkpoint layout's config.json and written back to both.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace gptoss {

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

  // Throws std::invalid_argument with every problem found (`source` names the file).
  void validate(const std::string& source) const;
  bool operator==(const GptOssConfig&) const = default;
};

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

// Readers: throw FormatError naming `source` and the field.
GptOssConfig config_from_hf_json(const nlohmann::json& json, const std::string& source);
GptOssConfig config_from_original_json(const nlohmann::json& json, const std::string& source);
GptOssConfig load_config_file(const std::string& path);  // detects the layout from the keys

nlohmann::ordered_json config_to_hf_json(const GptOssConfig& config);
// Throws std::invalid_argument for a layer pattern other than gpt-oss's (even layers slide),
// which OpenAI's config cannot say.
nlohmann::ordered_json config_to_original_json(const GptOssConfig& config);

}  // namespace gptoss

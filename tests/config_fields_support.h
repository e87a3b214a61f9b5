#pragma once
// For tests that iterate for_each_config_field: a valid config with every field set, each field
// changed in turn to another valid value, and the number of members GptOssConfig really has (so
// that a member left out of the visitor fails a test instead of going unnoticed).
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "convert/gptoss_config.h"

namespace gptoss::test {

// Every member set, none at gpt-oss's defaults where a test could confuse "read" with "defaulted".
inline GptOssConfig every_field_set_config() {
  GptOssConfig c;
  c.num_layers = 2;
  c.hidden_size = 64;
  c.intermediate_size = 96;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 32;
  c.num_experts = 4;
  c.experts_per_token = 2;
  c.vocab_size = 300;
  c.sliding_window = 16;
  c.sliding_layers = {true, false};
  c.rms_norm_eps = 2e-5;
  c.rope_theta = 10000.0;
  c.rope_scaling_factor = 8.0;
  c.rope_original_context = 2048;
  c.yarn_beta_fast = 16.0;
  c.yarn_beta_slow = 2.0;
  c.yarn_truncate = true;
  c.max_position_embeddings = 16384;
  c.swiglu_limit = 5.0;
  c.bos_token_id = 10;
  c.eos_token_id = 11;
  c.pad_token_id = 12;
  c.validate("every_field_set_config");
  return c;
}

// Another value that every_field_set_config() still validates with.
inline void change_value(uint32_t& v) { v *= 2; }
inline void change_value(uint64_t& v) { v *= 2; }
inline void change_value(double& v) { v *= 2; }
inline void change_value(bool& v) { v = !v; }
inline void change_value(std::optional<uint32_t>& v) { v = v ? std::optional<uint32_t>() : std::optional<uint32_t>(1); }
inline void change_value(std::vector<bool>& v) { v.front() = !v.front(); }

inline size_t config_field_count() {
  size_t n = 0;
  const GptOssConfig c;
  for_each_config_field([&](const ConfigField&, const auto&) { ++n; }, c);
  return n;
}

// Calls check(field, changed) once per field: `base` with that field, and only that one, changed
// (layer_types follows num_hidden_layers, which it must match; added layers slide on even
// indices, as gpt-oss's).
template <typename Check>
void for_each_changed_field(const GptOssConfig& base, Check&& check) {
  for (size_t target = 0; target < config_field_count(); ++target) {
    GptOssConfig changed = base;
    std::optional<ConfigField> field;
    size_t index = 0;
    for_each_config_field(
        [&](const ConfigField& f, auto& value) {
          if (index++ != target) return;
          change_value(value);
          field = f;
        },
        changed);
    for (size_t l = changed.sliding_layers.size(); l < changed.num_layers; ++l) changed.sliding_layers.push_back(l % 2 == 0);
    check(*field, changed);
  }
}

// How many members an aggregate has: the most initializers T{...} accepts (C++20 aggregates).
struct AnyMember {
  template <typename T>
  operator T&() const;
};
template <typename T, size_t... I>
constexpr bool initializable_with(std::index_sequence<I...>) {
  return requires { T{(void(I), AnyMember{})...}; };
}
template <typename T, size_t N = 0>
constexpr size_t aggregate_member_count() {
  if constexpr (!initializable_with<T>(std::make_index_sequence<N + 1>{})) return N;
  else return aggregate_member_count<T, N + 1>();
}

}  // namespace gptoss::test

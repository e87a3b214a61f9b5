#pragma once
// A small valid model.bin built with the container writer (4 text tokens, 2 specials, one block,
// two experts, every tensor region filled with its own byte value 1, 2, 3, ...): gptoss-badinputs'
// model.bin seed, and the file tests/modelbin corrupts and truncates. Header-only, on the
// model.bin container alone, so a test includes it without linking the bad-input corpus.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "formats/core/tensor_source.h"
#include "formats/modelbin/modelbin_writer.h"

namespace gptoss {

inline modelbin::ModelHeader tiny_modelbin_header() {
  modelbin::ModelHeader h;
  h.context_length = 4096;
  h.num_blocks = 1;
  h.num_experts = 2;
  h.num_active_experts = 4;
  h.embedding_dim = 32;
  h.mlp_dim = 32;
  h.swiglu_limit = 7;
  h.head_dim = 64;
  h.num_heads = 2;
  h.num_kv_heads = 1;
  h.attention_window = 8;
  h.rope_theta = 150000;
  h.interpolation_scale = 0.03125f;
  h.yarn_offset = -0.8697008f;
  h.yarn_scale = 0.10746627f;
  h.yarn_multiplier = 1.3465736f;
  h.rmsnorm_epsilon = 1e-5f;
  return h;
}

// The tokenizer section's regex: the first bytes after the 2 x 16-byte special-token table.
inline constexpr const char* kTinyModelBinRegex = "\\s+";

inline void write_tiny_modelbin(const std::filesystem::path& path) {
  modelbin::TokenizerSection tok;
  tok.special_token_uuids = {modelbin::Uuid{}, modelbin::Uuid{1, 2, 3}};
  tok.regex = kTinyModelBinRegex;
  static const std::string tokens[] = {"a", "bc", "def", "  "};
  for (const auto& t : tokens) tok.text_tokens.emplace_back(t);
  modelbin::ModelBinWriter writer(path, tiny_modelbin_header(), tok);
  std::vector<TensorSourcePtr> tensors;
  uint8_t value = 1;
  for (const auto& region : writer.layout().write_order())
    tensors.push_back(owned_bytes(std::vector<uint8_t>(region.region.size, value++)));
  writer.write_tensors(tensors);
  writer.commit();
}

}  // namespace gptoss

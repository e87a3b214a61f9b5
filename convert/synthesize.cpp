#include "convert/synthesize.h"

#include <array>
#include <cmath>
#include <stdexcept>

#include "convert/safetensors_model.h"
#include "formats/core/float16.h"
#include "formats/core/mapped_file.h"

namespace gptoss {

const std::vector<SynthPreset>& synth_presets() {
  static const std::vector<SynthPreset> presets = {
      {"a", 4, 64, 64, 16, 2, 64, 8, 4, 201088, 8, 1},
      {"20b", 24, 2880, 2880, 64, 8, 64, 32, 4, 201088, 128, 1},
      {"120b", 36, 2880, 2880, 64, 8, 64, 128, 4, 201088, 128, 1},
  };
  return presets;
}

const SynthPreset& synth_preset(const std::string& name) {
  for (const auto& p : synth_presets())
    if (p.name == name) return p;
  throw std::invalid_argument("unknown preset \"" + name + "\" (choose a, 20b or 120b)");
}

uint32_t crc32(std::string_view bytes) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char b : bytes) crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

uint64_t synth_tensor_seed(uint64_t global_seed, std::string_view hf_name) {
  return global_seed * 0x100000001B3ull + crc32(hf_name);
}

uint8_t synth_byte(uint64_t seed, uint64_t index) {
  uint64_t z = index * 0x9E3779B97F4A7C15ull + seed;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z = z ^ (z >> 31);
  return static_cast<uint8_t>(z);
}

GptOssConfig synth_config(const SynthPreset& p) {
  GptOssConfig c;
  c.num_layers = p.layers;
  c.hidden_size = p.hidden;
  c.intermediate_size = p.inter;
  c.num_heads = p.heads;
  c.num_kv_heads = p.kv;
  c.head_dim = p.head_dim;
  c.num_experts = p.experts;
  c.experts_per_token = p.topk;
  c.vocab_size = p.vocab;
  c.sliding_window = p.window;
  c.sliding_layers.resize(p.layers);
  for (uint32_t i = 0; i < p.layers; ++i) c.sliding_layers[i] = i % 2 == 0;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = 150000.0;
  c.rope_scaling_factor = 32.0;
  c.rope_original_context = 4096;
  c.yarn_beta_fast = 32.0;
  c.yarn_beta_slow = 1.0;
  c.yarn_truncate = false;
  c.max_position_embeddings = 131072;
  c.swiglu_limit = 7.0;
  if (p.vocab > 200002) {  // o200k_harmony's special ids, where the vocabulary holds them
    c.bos_token_id = 199998;
    c.eos_token_id = 200002;
    c.pad_token_id = 199999;
  }
  c.validate("preset " + p.name);
  return c;
}

namespace {
enum class Recipe { Uniform, Norm, Bytes, Scales };

// One generated tensor: element i is a function of (seed, i) alone, so any byte range can be
// produced independently (on any thread).
TensorSourcePtr generated(uint64_t seed, Recipe recipe, int exp2_or_base, uint64_t elements, uint64_t row_elements) {
  const bool bf16 = recipe == Recipe::Uniform || recipe == Recipe::Norm;
  const uint64_t elem_bytes = bf16 ? 2 : 1;
  const float scale = std::ldexp(1.0f, exp2_or_base - 7);
  return std::make_shared<LambdaRowSource>(
      elements / row_elements, row_elements * elem_bytes,
      [=](uint64_t first_row, uint64_t count, uint8_t* out) {
        const uint64_t begin = first_row * row_elements, n = count * row_elements;
        if (bf16) {
          // An element is a function of its random byte alone: look the 256 encodings up.
          uint16_t encoding[256];
          for (int r = 0; r < 256; ++r)
            encoding[r] = f32_to_bf16(recipe == Recipe::Uniform ? static_cast<float>(r - 128) * scale
                                                                : 1.0f + static_cast<float>(r % 64 - 32) / 128.0f);
          for (uint64_t i = 0; i < n; ++i) store_u16(out + 2 * i, encoding[synth_byte(seed, begin + i)]);
        } else if (recipe == Recipe::Bytes) {
          for (uint64_t i = 0; i < n; ++i) out[i] = synth_byte(seed, begin + i);
        } else {
          for (uint64_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(synth_byte(seed, begin + i) % 3 + exp2_or_base - 1);
        }
      });
}
}  // namespace

CanonicalModel synthesize_model(const SynthPreset& p) {
  CanonicalModel model;
  model.config = synth_config(p);
  model.source_description = "synthesized preset " + p.name;
  for (const auto& spec : canonical_tensor_specs(model.config)) {
    // Seeds come from the HF names; the fused original QKV is built from the same Q/K/V.
    const std::string hf = layout_tensor_name(CheckpointLayout::HuggingFace, spec.role, spec.layer);
    const uint64_t seed = synth_tensor_seed(p.seed, hf);
    uint64_t elements = 1;
    for (auto d : spec.shape) elements *= d;
    const uint64_t row = spec.shape.back();
    Recipe recipe = Recipe::Uniform;
    int param = 0;
    DType dtype = DType::BF16;
    switch (spec.role) {
      case TensorRole::Embedding: param = 0; break;
      case TensorRole::Unembedding: param = -2; break;
      case TensorRole::FinalNorm: case TensorRole::AttnNorm: case TensorRole::MlpNorm: recipe = Recipe::Norm; break;
      case TensorRole::AttnQ: case TensorRole::AttnK: param = -2; break;
      case TensorRole::AttnV: param = -1; break;
      case TensorRole::AttnQBias: case TensorRole::AttnKBias: case TensorRole::AttnVBias: param = -3; break;
      case TensorRole::AttnOut: case TensorRole::AttnOutBias: param = -3; break;
      case TensorRole::AttnSinks: param = 1; break;
      case TensorRole::RouterWeight: case TensorRole::RouterBias: param = -1; break;
      case TensorRole::Mlp1Bias: case TensorRole::Mlp2Bias: param = -3; break;
      case TensorRole::Mlp1Blocks: case TensorRole::Mlp2Blocks: recipe = Recipe::Bytes; dtype = DType::U8; break;
      case TensorRole::Mlp1Scales: recipe = Recipe::Scales; param = 125; dtype = DType::U8; break;
      case TensorRole::Mlp2Scales: recipe = Recipe::Scales; param = 122; dtype = DType::U8; break;
    }
    model.tensors.push_back({spec, dtype, generated(seed, recipe, param, elements, row), "synth:" + hf});
  }
  finalize_canonical_tensors(model.config, model.tensors, model.source_description);
  return model;
}

}  // namespace gptoss

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
      {"20b", 24, 2880, 2880, 64, 8, 64, 32, 4, 201088, 128, 1, SynthStatistics::TrainedLike},
      {"120b", 36, 2880, 2880, 64, 8, 64, 128, 4, 201088, 128, 1, SynthStatistics::TrainedLike},
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

uint64_t synth_word(uint64_t seed, uint64_t index) {
  uint64_t z = index * 0x9E3779B97F4A7C15ull + seed;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint8_t synth_byte(uint64_t seed, uint64_t index) { return static_cast<uint8_t>(synth_word(seed, index)); }

GptOssConfig synth_config(const SynthPreset& p) {
  // The preset gives the sizes; every other field keeps GptOssConfig's default, gpt-oss's published
  // value, so a field added to the config needs nothing here.
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
  // o200k_harmony's <|startoftext|>, <|return|> and <|endoftext|>, as the published config.json
  // and generation_config.json give them, where the vocabulary holds them (gptoss-synth --vocab).
  if (p.vocab > 200002) {
    c.bos_token_id = 199998;
    c.eos_token_id = 200002;
    c.pad_token_id = 199999;
  }
  c.validate("preset " + p.name);
  return c;
}

namespace {
// Uniform: (r - 128) * 2^(param - 7) for a byte r (the fixture's dense tensors).
// Norm: 1 + (r % 64 - 32) / 128.
// Bytes: r (MXFP4 blocks: uniform nibbles).
// Scales: r % 3 + param - 1 (the fixture's MXFP4 scales), or r % 2 + param - 1 (TrainedLike).
// Bell: (r0 + r1 + r2 + r3 - 510) * std / sqrt(21845), the four low bytes of one splitmix word:
//   a bell shape of standard deviation `std` within +-3.45 std; one f32 product rounded to bf16,
//   so the same bits on every machine.
enum class Recipe { Uniform, Norm, Bytes, Scales, Bell };

struct TensorRecipe {
  Recipe recipe = Recipe::Uniform;
  int param = 0;      // Uniform: exponent; Scales: base
  int scale_span = 3;  // Scales: how many consecutive exponents
  double std = 0;     // Bell
};

// One generated tensor: element i is a function of (seed, i) alone, so any byte range can be
// produced independently (on any thread).
TensorSourcePtr generated(uint64_t seed, TensorRecipe t, uint64_t elements, uint64_t row_elements) {
  const bool bf16 = t.recipe == Recipe::Uniform || t.recipe == Recipe::Norm || t.recipe == Recipe::Bell;
  const uint64_t elem_bytes = bf16 ? 2 : 1;
  const float scale = std::ldexp(1.0f, t.param - 7);
  const float bell_unit = static_cast<float>(t.std / std::sqrt(21845.0));
  return std::make_shared<LambdaRowSource>(
      elements / row_elements, row_elements * elem_bytes,
      [=](uint64_t first_row, uint64_t count, uint8_t* out) {
        const uint64_t begin = first_row * row_elements, n = count * row_elements;
        for (uint64_t i = 0; i < n; ++i) {
          const uint64_t w = synth_word(seed, begin + i);
          const auto r = static_cast<uint8_t>(w);  // synth_byte
          switch (t.recipe) {
            case Recipe::Uniform:
              store_u16(out + 2 * i, f32_to_bf16(static_cast<float>(static_cast<int>(r) - 128) * scale));
              break;
            case Recipe::Norm:
              store_u16(out + 2 * i, f32_to_bf16(1.0f + static_cast<float>(static_cast<int>(r % 64) - 32) / 128.0f));
              break;
            case Recipe::Bytes:
              out[i] = r;
              break;
            case Recipe::Scales:
              out[i] = static_cast<uint8_t>(r % t.scale_span + t.param - 1);
              break;
            case Recipe::Bell: {
              const int sum = static_cast<int>(w & 0xFF) + static_cast<int>(w >> 8 & 0xFF) +
                              static_cast<int>(w >> 16 & 0xFF) + static_cast<int>(w >> 24 & 0xFF);
              store_u16(out + 2 * i, f32_to_bf16(static_cast<float>(sum - 510) * bell_unit));
              break;
            }
          }
        }
      });
}

// shared/goldens/make_fixture.py's ranges.
TensorRecipe fixture_recipe(TensorRole role) {
  switch (role) {
    case TensorRole::Embedding: return {Recipe::Uniform, 0};
    case TensorRole::Unembedding: return {Recipe::Uniform, -2};
    case TensorRole::FinalNorm: case TensorRole::AttnNorm: case TensorRole::MlpNorm: return {Recipe::Norm};
    case TensorRole::AttnQ: case TensorRole::AttnK: return {Recipe::Uniform, -2};
    case TensorRole::AttnV: return {Recipe::Uniform, -1};
    case TensorRole::AttnQBias: case TensorRole::AttnKBias: case TensorRole::AttnVBias: return {Recipe::Uniform, -3};
    case TensorRole::AttnOut: case TensorRole::AttnOutBias: return {Recipe::Uniform, -3};
    case TensorRole::AttnSinks: return {Recipe::Uniform, 1};
    case TensorRole::RouterWeight: case TensorRole::RouterBias: return {Recipe::Uniform, -1};
    case TensorRole::Mlp1Bias: case TensorRole::Mlp2Bias: return {Recipe::Uniform, -3};
    case TensorRole::Mlp1Blocks: case TensorRole::Mlp2Blocks: return {Recipe::Bytes};
    case TensorRole::Mlp1Scales: return {Recipe::Scales, 125};
    case TensorRole::Mlp2Scales: return {Recipe::Scales, 122};
  }
  return {};
}

// The E8M0 exponent e (scale byte 127 + e) whose MXFP4 weights, with scales e - 1 or e at random
// and uniform nibbles, have the standard deviation closest to `target`. Uniform FP4 E2M1 values
// have RMS sqrt(68.5 / 8); the two scales average 4^e * (1/4 + 1) / 2 in square.
int mxfp4_exponent_for(double target) {
  const double unit_rms = std::sqrt(68.5 / 8) * std::sqrt(0.625);
  int best = 0;
  for (int e = -40; e <= 10; ++e)
    if (std::fabs(std::log(std::ldexp(unit_rms, e) / target)) < std::fabs(std::log(std::ldexp(unit_rms, best) / target)))
      best = e;
  return best;
}

// Residual updates (attention output, MoE output) of RMS ~kUpdate on inputs of RMS ~1.
constexpr double kUpdate = 0.5;
// RMS of SwiGLU's output (clamp(up) + 1) * gate * sigmoid(1.702 gate) for unit-normal gate and up.
constexpr double kSwigluRms = 0.9;

TensorRecipe trained_like_recipe(TensorRole role, const GptOssConfig& c) {
  const double hidden = c.hidden_size, heads_dim = static_cast<double>(c.num_heads) * c.head_dim, inter = c.intermediate_size;
  auto bell = [](double std) { return TensorRecipe{Recipe::Bell, 0, 0, std}; };
  switch (role) {
    case TensorRole::Embedding: return bell(kUpdate);
    case TensorRole::Unembedding: return bell(2.0 / std::sqrt(hidden));  // logits of std ~2
    case TensorRole::FinalNorm: case TensorRole::AttnNorm: case TensorRole::MlpNorm: return {Recipe::Norm};
    case TensorRole::AttnQ: case TensorRole::AttnK: case TensorRole::AttnV: return bell(1.0 / std::sqrt(hidden));
    case TensorRole::AttnQBias: case TensorRole::AttnKBias: case TensorRole::AttnVBias: return bell(0.02);
    case TensorRole::AttnOut: return bell(kUpdate / std::sqrt(heads_dim));
    case TensorRole::AttnOutBias: return bell(0.01);
    case TensorRole::AttnSinks: return {Recipe::Uniform, 1};
    case TensorRole::RouterWeight: return bell(2.0 / std::sqrt(hidden));  // router logits of std ~2
    case TensorRole::RouterBias: return bell(0.1);
    case TensorRole::Mlp1Bias: return bell(0.02);
    case TensorRole::Mlp2Bias: return bell(0.01);
    case TensorRole::Mlp1Blocks: case TensorRole::Mlp2Blocks: return {Recipe::Bytes};
    case TensorRole::Mlp1Scales: return {Recipe::Scales, 127 + mxfp4_exponent_for(1.0 / std::sqrt(hidden)), 2};
    case TensorRole::Mlp2Scales:
      return {Recipe::Scales, 127 + mxfp4_exponent_for(kUpdate / (std::sqrt(inter) * kSwigluRms)), 2};
  }
  return {};
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
    const TensorRecipe recipe = p.statistics == SynthStatistics::Fixture ? fixture_recipe(spec.role)
                                                                         : trained_like_recipe(spec.role, model.config);
    const DType dtype = recipe.recipe == Recipe::Bytes || recipe.recipe == Recipe::Scales ? DType::U8 : DType::BF16;
    model.tensors.push_back({spec, dtype, generated(seed, recipe, elements, row), "synth:" + hf});
  }
  finalize_canonical_tensors(model.config, model.tensors, model.source_description);
  return model;
}

}  // namespace gptoss

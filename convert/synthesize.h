#pragma once
// Deterministic GPT-OSS models generated from integers: splitmix64 with a seed per tensor from
// the CRC-32 of its Hugging Face name, values exact in bf16. Tensors are generated on demand
// while they are written, so a 60 GB model needs no memory.
//
// Two sets of statistics:
// - Fixture: shared/goldens/make_fixture.py's recipe (uniform values, a power-of-two range per
//   tensor kind). Preset "a" is the golden fixture, byte for byte.
// - TrainedLike (presets "20b" and "120b"): the scales of a well-initialized network, so a
//   forward pass at full size stays in a sane range and means something: bell-shaped values
//   (sum of four uniform bytes) with std 1/sqrt(fan_in) for the projections, small biases, norms
//   near one, MXFP4 scales giving expert weights of std 1/sqrt(fan_in) (mlp1) and residual
//   updates of RMS ~0.5 (attention output, mlp2), routers whose logits have std ~1 so tokens
//   spread over the experts. docs/eval.md records what it gives at the 20b widths.
#include <string>
#include <vector>

#include "convert/canonical_model.h"

namespace gptoss {

enum class SynthStatistics { Fixture, TrainedLike };

struct SynthPreset {
  std::string name;
  uint32_t layers, hidden, inter, heads, kv, head_dim, experts, topk, vocab, window;
  uint64_t seed;
  SynthStatistics statistics = SynthStatistics::Fixture;
};

const std::vector<SynthPreset>& synth_presets();
const SynthPreset& synth_preset(const std::string& name);  // throws std::invalid_argument

GptOssConfig synth_config(const SynthPreset& preset);
CanonicalModel synthesize_model(const SynthPreset& preset);

// The recipe's primitives (exposed for tests).
uint32_t crc32(std::string_view bytes);
uint64_t synth_tensor_seed(uint64_t global_seed, std::string_view hf_name);
uint64_t synth_word(uint64_t tensor_seed, uint64_t index);  // splitmix(seed, index)
uint8_t synth_byte(uint64_t tensor_seed, uint64_t index);  // low byte of synth_word

}  // namespace gptoss

#pragma once
// Deterministic GPT-OSS models generated from integers, the same recipe as
// shared/goldens/make_fixture.py: splitmix64 with a seed per tensor from the CRC-32 of its
// Hugging Face name, values exact in bf16. Preset "a" is the golden fixture, byte for byte;
// "20b" and "120b" have the real shapes for performance work. Tensors are generated on demand
// while they are written, so a 60 GB model needs no memory.
#include <string>
#include <vector>

#include "convert/canonical_model.h"

namespace gptoss {

struct SynthPreset {
  std::string name;
  uint32_t layers, hidden, inter, heads, kv, head_dim, experts, topk, vocab, window;
  uint64_t seed;
};

const std::vector<SynthPreset>& synth_presets();
const SynthPreset& synth_preset(const std::string& name);  // throws std::invalid_argument

GptOssConfig synth_config(const SynthPreset& preset);
CanonicalModel synthesize_model(const SynthPreset& preset);

// The recipe's primitives (exposed for tests).
uint32_t crc32(std::string_view bytes);
uint64_t synth_tensor_seed(uint64_t global_seed, std::string_view hf_name);
uint8_t synth_byte(uint64_t tensor_seed, uint64_t index);  // low byte of splitmix(seed, index)

}  // namespace gptoss

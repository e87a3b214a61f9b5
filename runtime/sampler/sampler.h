#pragma once
// Turning logits into the next token: greedy, or sampling from the distribution after
// temperature, top-k, top-p (nucleus) and min-p filters, in that order (the order of the
// transformers logits warpers), with a seeded deterministic generator; plus stop conditions.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "runtime/sampler/rng.h"

namespace gptoss::sampling {

struct SamplingParams {
  float temperature = 0.0f;  // <= 0: greedy (argmax, ties to the lowest id)
  uint32_t top_k = 0;        // 0: off
  float top_p = 1.0f;        // >= 1: off; keeps the smallest prefix by probability with mass >= top_p
  float min_p = 0.0f;        // <= 0: off; keeps tokens with p >= min_p * p_max
  uint64_t seed = 0;
};

// Throws std::invalid_argument naming the bad value.
void validate(const SamplingParams& params);

struct Candidate {
  uint32_t id;
  double probability;
};

// The distribution sampling draws from: candidates surviving every filter, most probable first
// (ties by lowest id), probabilities renormalised to sum to 1. Greedy gives the argmax alone.
std::vector<Candidate> filtered_distribution(std::span<const float> logits, const SamplingParams& params);

uint32_t argmax(std::span<const float> logits);

// Draws from the filtered distribution with the seeded generator. Walks the candidates in id
// order unless top-p sorted them: deterministic for a given seed, without sorting the whole
// vocabulary for every token.
class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);
  const SamplingParams& params() const { return params_; }
  uint32_t sample(std::span<const float> logits);

 private:
  SamplingParams params_;
  Rng rng_;
};

enum class StopReason { None, StopToken, MaxTokens };

// When generation ends: a stop token (it is part of the output) or the token budget.
struct StopCondition {
  std::vector<uint32_t> stop_tokens;
  std::optional<uint64_t> max_tokens;
  StopReason check(uint32_t token, uint64_t generated_so_far_including_token) const;
};

}  // namespace gptoss::sampling

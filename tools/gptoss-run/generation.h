#pragma once
// The generate loop of gptoss-run: prefill the prompt, then sample and decode one token at a
// time through the KV cache until a stop token or the budget, timing both phases.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "runtime/engine.h"
#include "runtime/sampler/sampler.h"

namespace gptoss::run {

struct GenerationResult {
  std::vector<uint32_t> tokens;  // generated, a final stop token included
  sampling::StopReason stop = sampling::StopReason::None;
  double prompt_seconds = 0;      // the prefill forward
  double generation_seconds = 0;  // sampling + decode forwards of the generated tokens
};

struct GenerationRequest {
  std::span<const uint32_t> prompt;
  uint64_t max_tokens = 0;  // 0: prefill only
  sampling::StopCondition stop;
  // When set, receives the logits of every prompt position: [prompt.size(), vocab] row-major.
  std::vector<float>* prompt_logits = nullptr;
  // When set, sees every stage of the prompt's forward (embedding, layers, final norm): --trace.
  // Only with prompt_logits (a greedy prefill otherwise asks the engine for the argmax alone).
  runtime::ActivationObserver prefill_observer;
  std::function<void(uint32_t)> on_token;  // called as each token is chosen (streaming)
};

// Any engine: the prompt as one forward from an empty cache, then one forward per token.
GenerationResult generate(runtime::Engine& engine, sampling::Sampler& sampler, const GenerationRequest& request);

// "1,2, 3" -> {1, 2, 3}; throws std::invalid_argument naming the bad item.
std::vector<uint32_t> parse_token_list(const std::string& text);

}  // namespace gptoss::run

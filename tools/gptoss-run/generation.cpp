#include "tools/gptoss-run/generation.h"

#include <charconv>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>

namespace gptoss::run {
namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

GenerationResult generate(runtime::Engine& engine, sampling::Sampler& sampler, const GenerationRequest& request) {
  if (request.prompt.empty()) throw std::invalid_argument("the prompt has no tokens");
  if (request.prefill_observer && !request.prompt_logits)
    throw std::invalid_argument("generate: a prefill observer needs prompt_logits (the prefill must return every row)");
  GenerationResult result;
  engine.reset();
  // Greedy decoding asks the engine for the argmax alone (a device engine then never copies the
  // vocabulary's logits to the host); the same token as sampler.sample would pick.
  const bool greedy = sampler.params().temperature <= 0.0f;
  std::span<const float> logits;  // the last token's, in the engine's memory (or the prompt rows')
  std::optional<uint32_t> token;
  auto next_token = [&](std::span<const uint32_t> tokens) -> std::optional<uint32_t> {
    if (greedy) return engine.forward_greedy(tokens);
    logits = engine.forward_last(tokens);  // valid until the next forward: sampled before it
    return std::nullopt;
  };
  const auto prefill_start = std::chrono::steady_clock::now();
  if (request.prompt_logits) {
    // Keep every row for the caller; sampling only needs the last one.
    *request.prompt_logits = engine.forward(request.prompt, runtime::LogitRows::All, request.prefill_observer);
    logits = std::span<const float>(*request.prompt_logits).last(engine.vocab_size());
  } else if (request.max_tokens > 0) {
    token = next_token(request.prompt);
  } else {
    engine.forward(request.prompt, runtime::LogitRows::None);
  }
  result.prompt_seconds = seconds_since(prefill_start);
  if (request.max_tokens == 0) return result;

  const auto generation_start = std::chrono::steady_clock::now();
  auto stop = request.stop;
  stop.max_tokens = request.max_tokens;
  while (true) {
    const uint32_t chosen = token ? *token : sampler.sample(logits);
    result.tokens.push_back(chosen);
    if (request.on_token) request.on_token(chosen);
    result.stop = stop.check(chosen, result.tokens.size());
    if (result.stop != sampling::StopReason::None) break;
    const uint32_t next[] = {chosen};
    token = next_token(next);
  }
  result.generation_seconds = seconds_since(generation_start);
  return result;
}

std::vector<uint32_t> parse_token_list(const std::string& text) {
  std::vector<uint32_t> ids;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    size_t first = start, last = end;
    while (first < last && text[first] == ' ') ++first;
    while (last > first && text[last - 1] == ' ') --last;
    uint32_t id = 0;
    const auto [ptr, ec] = std::from_chars(text.data() + first, text.data() + last, id);
    if (first == last || ec != std::errc() || ptr != text.data() + last)
      throw std::invalid_argument("--prompt-tokens: \"" + text.substr(start, end - start) +
                                  "\" is not a token id (expected ID,ID,... of unsigned integers)");
    ids.push_back(id);
    start = end + 1;
  }
  return ids;
}

}  // namespace gptoss::run

#pragma once
// The generate loop of gptoss-run: prefill the prompt, then sample and decode one token at a
// time through the KV cache until a stop token or the budget, timing both phases; what it starts
// from, the prompt's ids and the stop tokens; and the whole generation mode, from loading the model
// to the files it writes.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/engine.h"
#include "runtime/sampler/sampler.h"
#include "runtime/tokenizer/tokenizer.h"

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

// The prompt as gptoss-run's options give it.
struct PromptSpec {
  std::string text;    // -p: a harmony conversation's user message, or with no_harmony encoded as is
  std::string tokens;  // --prompt-tokens ID,ID,...: the ids themselves (text then unused)
  std::vector<uint32_t> ids;  // ids already resolved (--text FILE's chunk); used as they are
  bool no_harmony = false;
  // The harmony conversation: the system message's reasoning effort ("low", "medium", "high") and
  // date, or no system message; developer instructions.
  std::string effort = "medium", date, developer;
  bool no_system = false;
};
// The prompt's ids: given directly, the text as is (special tokens written in it recognised), or a
// harmony conversation ready for the assistant's completion. `tokenizer` may be null for ids only.
std::vector<uint32_t> prompt_ids(const PromptSpec& spec, const Tokenizer* tokenizer);

// `extra`, then unless `no_defaults` the model's EOS and harmony's <|return|> and <|call|>.
std::vector<uint32_t> stop_tokens(std::vector<uint32_t> extra, bool no_defaults, const GptOssConfig& config,
                                  const Tokenizer* tokenizer);


// gptoss-run's generation mode as its options ask for it.
struct GenerationSetup {
  std::string model_path, engine = "cpu", kv_cache = "f32";  // engine_kind_names, kv_cache_type_names
  std::optional<uint32_t> device;
  runtime::VulkanTuning vulkan;  // the Vulkan engine's (--profile, --no-coopmat, --tuning ...)
  uint32_t prefill_chunk = runtime::EngineOptions{}.prefill_chunk;  // the Vulkan engine's (--prefill-chunk)
  PromptSpec prompt;
  uint64_t max_tokens = 128;
  sampling::SamplingParams sampling;
  std::vector<uint32_t> extra_stops;
  bool no_default_stops = false;
  bool raw = false, show_reasoning = false;  // how the output is shown (TokenDisplay)
  std::string dump_logits, trace;            // files to write ("": none)
};

struct GenerationReport {
  std::string engine, device;
  uint32_t vocab_size = 0;
  std::vector<uint32_t> prompt;
  GenerationResult result;
  std::optional<std::string> text;  // the generated tokens as text, where there is a tokenizer
  struct Harmony {
    std::string final, analysis;
    std::vector<std::string> problems;
  };
  std::optional<Harmony> harmony;  // the output parsed as harmony, where the prompt was a conversation
  std::string dump_logits, trace;  // the files written ("": none)
  std::string diagnostics;         // the engine's (Engine::diagnostics): what --profile measured

  double prompt_tokens_per_second() const { return static_cast<double>(prompt.size()) / result.prompt_seconds; }
  double generation_tokens_per_second() const {  // 0 without generated tokens
    return result.tokens.empty() ? 0.0 : static_cast<double>(result.tokens.size()) / result.generation_seconds;
  }
};

// Loads the model, makes the engine, renders the prompt, generates and writes --dump-logits and
// --trace. `show` receives the output's text as it streams (TokenDisplay); notices (the Vulkan
// device, an unusable tokenizer) go to stderr.
GenerationReport run_generation(const GenerationSetup& setup, const std::function<void(const std::string&)>& show);

}  // namespace gptoss::run

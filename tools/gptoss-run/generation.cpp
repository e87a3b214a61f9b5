#include "tools/gptoss-run/generation.h"

#include <charconv>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>

#include "convert/model_io.h"
#include "formats/core/atomic_file.h"
#include "runtime/harmony/harmony_messages.h"
#include "runtime/parity/trace_file.h"
#include "tools/gptoss-run/token_display.h"
#include "verify/canonical_digest.h"

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

namespace {
harmony::ReasoningEffort effort_from_name(const std::string& name) {
  if (name == "low") return harmony::ReasoningEffort::Low;
  if (name == "high") return harmony::ReasoningEffort::High;
  return harmony::ReasoningEffort::Medium;
}
}  // namespace

std::vector<uint32_t> prompt_ids(const PromptSpec& spec, const Tokenizer* tokenizer) {
  if (!spec.ids.empty()) return spec.ids;
  if (!spec.tokens.empty()) return parse_token_list(spec.tokens);
  if (!tokenizer) throw std::invalid_argument("a text prompt needs a tokenizer");
  if (spec.no_harmony) return tokenizer->encode(spec.text, /*allow_special=*/true);
  harmony::SystemContent system;
  system.reasoning_effort = effort_from_name(spec.effort);
  if (!spec.date.empty()) system.conversation_start_date = spec.date;
  std::vector<harmony::Message> messages;
  if (!spec.no_system) messages.push_back(harmony::Message::system(system));
  if (!spec.developer.empty()) {
    harmony::DeveloperContent content;
    content.instructions = spec.developer;
    messages.push_back(harmony::Message::developer(content));
  }
  messages.push_back(harmony::Message::user(spec.text));
  return harmony::render_conversation_for_completion_tokens(*tokenizer, messages);
}

std::vector<uint32_t> stop_tokens(std::vector<uint32_t> extra, bool no_defaults, const GptOssConfig& config,
                                  const Tokenizer* tokenizer) {
  if (no_defaults) return extra;
  if (config.eos_token_id) extra.push_back(*config.eos_token_id);
  if (tokenizer)
    for (const char* special : {"<|return|>", "<|call|>"})
      if (auto id = tokenizer->special_id(special)) extra.push_back(*id);
  return extra;
}

namespace {

std::optional<Tokenizer> usable_tokenizer(const CanonicalModel& model, const GenerationSetup& setup) {
  std::optional<Tokenizer> tokenizer;
  if (model.tokenizer) {
    try {
      tokenizer.emplace(*model.tokenizer);
    } catch (const std::exception& e) {
      if (!setup.prompt.text.empty()) throw;
      std::cerr << "gptoss-run: the model's tokenizer is unusable, showing token ids: " << e.what() << "\n";
    }
  }
  if (!setup.prompt.text.empty() && !tokenizer)
    throw std::invalid_argument("-p needs a tokenizer and " + setup.model_path + " has none; use --prompt-tokens");
  return tokenizer;
}

void write_logits(const std::filesystem::path& path, const std::vector<float>& logits) {
  AtomicFileWriter out(path);
  for (float v : logits) out.write_f32(v);  // little-endian whatever the host
  out.commit();
}

}  // namespace

GenerationReport run_generation(const GenerationSetup& setup, const std::function<void(const std::string&)>& show) {
  if (setup.prompt.ids.empty() && setup.prompt.tokens.empty() && setup.prompt.text.empty())
    throw std::invalid_argument("give a prompt: -p TEXT or --prompt-tokens ID,ID,...");
  const auto model = load_model(setup.model_path);
  const auto tokenizer = usable_tokenizer(model, setup);
  const Tokenizer* tok = tokenizer ? &*tokenizer : nullptr;
  const auto prompt = prompt_ids(setup.prompt, tok);

  runtime::EngineOptions options;
  options.max_context = prompt.size() + setup.max_tokens;
  options.device_index = setup.device;
  if (setup.engine == "vulkan") {
    options.vulkan = setup.vulkan;
    options.prefill_chunk = setup.prefill_chunk;
  }
  options.kv_cache = *runtime::kv_cache_type_from_name(setup.kv_cache);
  const auto engine = runtime::make_engine(*runtime::engine_kind_from_name(setup.engine), model, options);
  if (engine->kind() == runtime::EngineKind::Vulkan)
    std::fprintf(stderr, "vulkan: %s\n", engine->device_description().c_str());
  // Prompt ids outside the vocabulary: Engine::forward refuses them, naming the id and its position.

  const bool harmony = !setup.prompt.text.empty() && !setup.prompt.no_harmony;
  const auto mode = !tok ? DisplayMode::Ids : harmony && !setup.raw ? DisplayMode::Harmony : DisplayMode::Raw;
  TokenDisplay display(mode, tok, setup.show_reasoning);

  GenerationRequest request;
  request.prompt = prompt;
  request.max_tokens = setup.max_tokens;
  request.stop.stop_tokens = stop_tokens(setup.extra_stops, setup.no_default_stops, model.config, tok);
  std::vector<float> prompt_logits;
  if (!setup.dump_logits.empty() || !setup.trace.empty()) request.prompt_logits = &prompt_logits;
  std::optional<parity::TraceRecorder> recorder;
  if (!setup.trace.empty()) {
    recorder.emplace(setup.engine + ": " + model_label(setup.model_path));
    request.prefill_observer = recorder->observer();
  }
  request.on_token = [&](uint32_t id) { show(display.push(id)); };
  sampling::Sampler sampler(setup.sampling);
  GenerationReport report{setup.engine, engine->device_description(), engine->vocab_size(), prompt,
                          generate(*engine, sampler, request)};
  show(display.finish());
  if (!setup.dump_logits.empty()) write_logits(setup.dump_logits, prompt_logits);
  if (recorder) {
    recorder->add_logits(std::move(prompt_logits), prompt.size(), engine->vocab_size(), 0);
    const parity::TraceHeader header{model_digest(canonical_digests(model)), setup.model_path, setup.engine,
                                     engine->device_description(), prompt};
    parity::write_trace_file(setup.trace, header, recorder->take());
  }
  if (tok) report.text = decode_for_display(*tok, report.result.tokens);
  if (const auto& parser = display.parser())
    report.harmony = GenerationReport::Harmony{parser->text_of_channel("final"), parser->text_of_channel("analysis"),
                                               parser->problems()};
  report.dump_logits = setup.dump_logits;
  report.diagnostics = engine->diagnostics();
  report.trace = setup.trace;
  return report;
}

}  // namespace gptoss::run

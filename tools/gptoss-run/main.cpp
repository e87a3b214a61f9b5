// gptoss-run: generate with a GPT-OSS model in any format, on the CPU reference engine or the
// Vulkan engine (--engine vulkan).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <optional>

#include "convert/model_io.h"
#include "formats/core/atomic_file.h"
#include "runtime/cpu/cpu_engine.h"
#include "runtime/harmony/harmony_messages.h"
#include "runtime/parity/activation_trace.h"
#include "runtime/sampler/sampler.h"
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/vulkan/vulkan_engine.h"
#include "tools/gptoss-run/generation.h"
#include "tools/gptoss-run/token_display.h"

namespace {

constexpr const char* kDescription =
    "Run a GPT-OSS model (safetensors folder, .gguf or model.bin) on the CPU reference engine\n"
    "(--engine cpu, f32, the default; --engine cpu-f64, the same engine computing in double) or the\n"
    "Vulkan engine (--engine vulkan).\n"
    "\n"
    "-p TEXT is rendered as a harmony conversation (system + user message, then the assistant\n"
    "turn) and the final channel is shown; --show-reasoning adds the analysis channel, --raw\n"
    "shows every generated token as text. --no-harmony encodes TEXT as is (special tokens written\n"
    "in it are recognised) for plain completion. --prompt-tokens feeds ids directly and shows the\n"
    "output raw. Generated text streams to stdout; prompt and generation tokens/s go to stderr.\n"
    "\n"
    "--dump-logits FILE writes the logits of every PROMPT position as raw little-endian f32,\n"
    "position-major: prompt_tokens x vocab values, row t holding the logits that predict token\n"
    "t + 1 (no header; vocab is the model's vocab_size, printed on stderr and in --json).\n"
    "\n"
    "--parity OTHER... runs MODEL and every OTHER on the prompt (one prefill) and prints, per stage\n"
    "(embedding, each layer's residual stream, final norm, logits), the max abs difference against\n"
    "MODEL, or against golden activations with --refs FILE --refs-prompt NAME (the prompt's ids are\n"
    "then taken from the references). --engines cpu,vulkan runs every model on each engine listed\n"
    "(one column per model and engine); with --prompt-tokens alone it compares MODEL across them.";

const std::vector<std::string> kEngineNames = {"cpu", "cpu-f64", "vulkan"};

gptoss::cpu::CpuPrecision cpu_precision_of(const std::string& engine) {
  return engine == "cpu-f64" ? gptoss::cpu::CpuPrecision::F64 : gptoss::cpu::CpuPrecision::F32;
}

void write_logits(const std::filesystem::path& path, const std::vector<float>& logits) {
  gptoss::AtomicFileWriter out(path);
  for (float v : logits) out.write_f32(v);  // little-endian whatever the host
  out.commit();
}

const char* stop_reason_name(gptoss::sampling::StopReason reason) {
  switch (reason) {
    case gptoss::sampling::StopReason::StopToken: return "stop_token";
    case gptoss::sampling::StopReason::MaxTokens: return "max_tokens";
    case gptoss::sampling::StopReason::None: break;
  }
  return "none";
}

std::optional<gptoss::harmony::ReasoningEffort> effort_from_name(const std::string& name) {
  if (name == "low") return gptoss::harmony::ReasoningEffort::Low;
  if (name == "high") return gptoss::harmony::ReasoningEffort::High;
  return gptoss::harmony::ReasoningEffort::Medium;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{kDescription};
  std::string model_path, prompt_text, prompt_tokens, dump_logits, engine_name = "cpu", effort = "medium";
  std::string developer, date;
  uint64_t max_tokens = 128;
  gptoss::sampling::SamplingParams sampling;
  std::vector<uint32_t> extra_stops;
  bool json_output = false, no_default_stops = false, no_harmony = false, raw = false, show_reasoning = false;
  bool no_system = false;
  app.add_option("model", model_path, "checkpoint folder, .safetensors, .gguf or model.bin")->required();
  auto* text_option = app.add_option("-p,--prompt", prompt_text, "prompt text (needs the model's tokenizer)");
  app.add_option("--prompt-tokens", prompt_tokens, "prompt as token ids: ID,ID,...")->excludes(text_option);
  app.add_option("--max-tokens", max_tokens, "tokens to generate at most (0: prompt only)")->capture_default_str();
  app.add_option("--temperature", sampling.temperature, "0 = greedy")->capture_default_str();
  app.add_option("--top-k", sampling.top_k, "keep the K most likely tokens (0 = off)")->capture_default_str();
  app.add_option("--top-p", sampling.top_p, "nucleus: smallest set with probability mass >= P (1 = off)")->capture_default_str();
  app.add_option("--min-p", sampling.min_p, "keep tokens with p >= M * p_max (0 = off)")->capture_default_str();
  app.add_option("--seed", sampling.seed, "seed of the sampling generator")->capture_default_str();
  app.add_option("--stop-token", extra_stops, "extra stop token id (repeatable)");
  app.add_flag("--no-default-stops", no_default_stops, "do not stop at EOS, <|return|> or <|call|>");
  app.add_option("--dump-logits", dump_logits, "write every prompt position's logits (see above)");
  app.add_flag("--json", json_output, "print one JSON object at the end instead of streaming text");
  app.add_flag("--no-harmony", no_harmony, "plain completion: encode -p text as is");
  app.add_flag("--raw", raw, "show every generated token as text, specials included");
  app.add_flag("--show-reasoning", show_reasoning, "show the analysis channel too");
  app.add_option("--reasoning-effort", effort, "harmony system message: low, medium or high")
      ->check(CLI::IsMember({"low", "medium", "high"}))
      ->capture_default_str();
  app.add_option("--developer", developer, "harmony developer instructions");
  app.add_flag("--no-system", no_system, "harmony without a system message (as the golden prompts)");
  app.add_option("--date", date, "harmony conversation start date (YYYY-MM-DD)");
  app.add_option("--engine", engine_name, "cpu (f32 reference), cpu-f64 (the reference in double) or vulkan")
      ->check(CLI::IsMember(kEngineNames))
      ->capture_default_str();
  std::vector<std::string> parity_models;
  std::string refs_path, refs_prompt;
  app.add_option("--parity", parity_models, "compare stage by stage with these models (see above)");
  app.add_option("--refs", refs_path, "golden activations (refs-a.safetensors) for --parity");
  std::vector<std::string> parity_engines = {"cpu"};
  auto* engines_option = app.add_option("--engines", parity_engines, "engines --parity runs each model on: cpu, cpu-f64, vulkan (comma separated)")
      ->delimiter(',')
      ->check(CLI::IsMember(kEngineNames))
      ->capture_default_str();
  app.add_option("--refs-prompt", refs_prompt, "prompt name inside --refs (hi, four, harmony, long, random)");
  CLI11_PARSE(app, argc, argv);

  try {
    if (!parity_models.empty() || !refs_path.empty() || engines_option->count() > 0) {
      std::optional<gptoss::parity::Trace> reference;
      std::vector<uint32_t> ids;
      if (!refs_path.empty()) {
        if (refs_prompt.empty()) throw std::invalid_argument("--refs needs --refs-prompt NAME");
        const auto refs = gptoss::SafetensorsFile::open(refs_path);
        reference = gptoss::parity::trace_from_refs(refs, refs_prompt, &ids);
      } else if (!prompt_tokens.empty()) {
        ids = gptoss::run::parse_token_list(prompt_tokens);
      } else {
        throw std::invalid_argument("--parity needs --prompt-tokens or --refs");
      }
      std::vector<gptoss::parity::Trace> traces;
      std::vector<std::string> all = {model_path};
      all.insert(all.end(), parity_models.begin(), parity_models.end());
      for (const auto& path : all) {
        const auto m = gptoss::load_model(path);
        std::string label = gptoss::format_name(gptoss::detect_input_format(path)) + " " +
                            std::filesystem::path(path).filename().string();
        for (const auto& engine : parity_engines)
          traces.push_back(engine == "vulkan"
                               ? gptoss::parity::trace_vulkan(m, ids, "vulkan: " + label)
                               : gptoss::parity::trace_cpu(m, ids, engine + ": " + label, cpu_precision_of(engine)));
      }
      if (!reference) {
        reference = traces.front();
        traces.erase(traces.begin());
      }
      std::printf("%zu prompt tokens\n%s", ids.size(), gptoss::parity::parity_table(*reference, traces).c_str());
      return 0;
    }
    if (prompt_tokens.empty() && prompt_text.empty()) throw std::invalid_argument("give a prompt: -p TEXT or --prompt-tokens ID,ID,...");
    const auto model = gptoss::load_model(model_path);
    std::optional<gptoss::Tokenizer> tokenizer;
    if (model.tokenizer) {
      try {
        tokenizer.emplace(*model.tokenizer);
      } catch (const std::exception& e) {
        if (!prompt_text.empty()) throw;
        std::cerr << "gptoss-run: the model's tokenizer is unusable, showing token ids: " << e.what() << "\n";
      }
    }
    if (!prompt_text.empty() && !tokenizer)
      throw std::invalid_argument("-p needs a tokenizer and " + model_path + " has none; use --prompt-tokens");

    const bool harmony = !prompt_text.empty() && !no_harmony;
    std::vector<uint32_t> prompt;
    if (!prompt_tokens.empty()) {
      prompt = gptoss::run::parse_token_list(prompt_tokens);
    } else if (no_harmony) {
      prompt = tokenizer->encode(prompt_text, /*allow_special=*/true);
    } else {
      gptoss::harmony::SystemContent system;
      system.reasoning_effort = effort_from_name(effort);
      if (!date.empty()) system.conversation_start_date = date;
      std::vector<gptoss::harmony::Message> messages;
      if (!no_system) messages.push_back(gptoss::harmony::Message::system(system));
      if (!developer.empty()) {
        gptoss::harmony::DeveloperContent content;
        content.instructions = developer;
        messages.push_back(gptoss::harmony::Message::developer(content));
      }
      messages.push_back(gptoss::harmony::Message::user(prompt_text));
      prompt = gptoss::harmony::render_conversation_for_completion_tokens(*tokenizer, messages);
    }

    std::optional<gptoss::cpu::CpuEngine> cpu_engine;
    std::optional<gptoss::vk::VulkanEngine> vulkan_engine;
    gptoss::run::EngineCalls engine;
    if (engine_name == "vulkan") {
      gptoss::vk::VulkanEngineOptions options;
      options.max_context = static_cast<uint32_t>(
          std::min<uint64_t>(prompt.size() + max_tokens, std::numeric_limits<uint32_t>::max()));
      engine = gptoss::run::engine_calls(vulkan_engine.emplace(model, options));
      std::fprintf(stderr, "vulkan: %s (%s)\n", vulkan_engine->device().name.c_str(),
                   vulkan_engine->device().driver.c_str());
    } else {
      engine = gptoss::run::engine_calls(cpu_engine.emplace(model, cpu_precision_of(engine_name)));
    }
    for (uint32_t id : prompt)
      if (id >= engine.vocab_size)
        throw std::invalid_argument("prompt token " + std::to_string(id) + " is outside the vocabulary of " +
                                    std::to_string(engine.vocab_size));

    const auto mode = !tokenizer ? gptoss::run::DisplayMode::Ids
                      : harmony && !raw ? gptoss::run::DisplayMode::Harmony
                                        : gptoss::run::DisplayMode::Raw;
    gptoss::run::TokenDisplay display(mode, tokenizer ? &*tokenizer : nullptr, show_reasoning);

    gptoss::run::GenerationRequest request;
    request.prompt = prompt;
    request.max_tokens = max_tokens;
    request.stop.stop_tokens = extra_stops;
    if (!no_default_stops) {
      if (model.config.eos_token_id) request.stop.stop_tokens.push_back(*model.config.eos_token_id);
      if (tokenizer)
        for (const char* special : {"<|return|>", "<|call|>"})
          if (auto id = tokenizer->special_id(special)) request.stop.stop_tokens.push_back(*id);
    }
    std::vector<float> prompt_logits;
    if (!dump_logits.empty()) request.prompt_logits = &prompt_logits;
    auto print = [&](const std::string& text) {
      if (json_output || text.empty()) return;
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
    };
    request.on_token = [&](uint32_t id) { print(display.push(id)); };
    gptoss::sampling::Sampler sampler(sampling);
    const auto result = gptoss::run::generate(engine, sampler, request);
    print(display.finish());
    if (!dump_logits.empty()) write_logits(dump_logits, prompt_logits);

    const double prompt_rate = static_cast<double>(prompt.size()) / result.prompt_seconds;
    const double generation_rate =
        result.tokens.empty() ? 0.0 : static_cast<double>(result.tokens.size()) / result.generation_seconds;
    if (json_output) {
      nlohmann::ordered_json j;
      j["engine"] = engine_name;
      j["vocab_size"] = engine.vocab_size;
      j["prompt_tokens"] = prompt;
      j["tokens"] = result.tokens;
      if (tokenizer) j["text"] = gptoss::run::decode_for_display(*tokenizer, result.tokens);
      if (auto& parser = display.parser()) {
        j["final"] = parser->text_of_channel("final");
        j["analysis"] = parser->text_of_channel("analysis");
        j["harmony_problems"] = parser->problems();
      }
      j["stop_reason"] = stop_reason_name(result.stop);
      j["prompt_seconds"] = result.prompt_seconds;
      j["generation_seconds"] = result.generation_seconds;
      j["prompt_tokens_per_second"] = prompt_rate;
      j["generation_tokens_per_second"] = generation_rate;
      if (!dump_logits.empty()) j["dump_logits"] = dump_logits;
      std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    } else {
      std::printf("\n");
      std::fflush(stdout);
      if (auto& parser = display.parser(); parser && !parser->problems().empty())
        std::fprintf(stderr, "harmony: %zu problems parsing the output (e.g. %s); --raw shows every token\n",
                     parser->problems().size(), parser->problems().front().c_str());
      std::fprintf(stderr, "prompt: %zu tokens, %.1f tokens/s; generation: %zu tokens, %.1f tokens/s (stop: %s)\n",
                   prompt.size(), prompt_rate, result.tokens.size(), generation_rate, stop_reason_name(result.stop));
      if (!dump_logits.empty())
        std::fprintf(stderr, "wrote %zu x %u logits to %s\n", prompt.size(), engine.vocab_size, dump_logits.c_str());
    }
  } catch (const std::exception& e) {
    std::cerr << "gptoss-run: " << e.what() << "\n";
    return 2;
  }
  return 0;
}

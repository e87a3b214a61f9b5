// gptoss-run: generate with a GPT-OSS model in any format on any engine (the CPU reference engine
// in f32 or f64, the Vulkan engine), compare engines and formats stage by stage (--parity), or
// list the Vulkan devices. Each mode is one function below; options a mode cannot honour are
// refused before anything is loaded.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include "convert/model_io.h"
#include "formats/core/atomic_file.h"
#include "runtime/engine.h"
#include "runtime/harmony/harmony_messages.h"
#include "runtime/parity/activation_trace.h"
#include "runtime/parity/parity_run.h"
#include "runtime/parity/trace_file.h"
#include "runtime/sampler/sampler.h"
#include "runtime/tokenizer/tokenizer.h"
#include "tools/common/cli_options.h"
#include "tools/common/tool_main.h"
#include "tools/gptoss-run/generation.h"
#include "tools/gptoss-run/token_display.h"
#include "verify/canonical_digest.h"

namespace {

using gptoss::model_label;
using gptoss::refuse_if_given;
using gptoss::runtime::EngineKind;

constexpr const char* kDescription =
    "Run a GPT-OSS model (safetensors folder, .gguf or model.bin) on the CPU reference engine\n"
    "(--engine cpu, f32, the default; --engine cpu-f64, the same engine computing in double) or the\n"
    "Vulkan engine (--engine vulkan; --list-devices shows the devices, --device N picks one).\n"
    "\n"
    "-p TEXT is rendered as a harmony conversation (system + user message, then the assistant\n"
    "turn) and the final channel is shown; --show-reasoning adds the analysis channel, --raw\n"
    "shows every generated token as text. --no-harmony encodes TEXT as is (special tokens written\n"
    "in it are recognised) for plain completion. --prompt-tokens feeds ids directly and shows the\n"
    "output raw. Generated text streams to stdout; prompt and generation tokens/s go to stderr.\n"
    "llama.cpp's spellings work too: -m MODEL, -n N, --temp T, -s SEED.\n"
    "\n"
    "--dump-logits FILE writes the logits of every PROMPT position as raw little-endian f32,\n"
    "position-major: prompt_tokens x vocab values, row t holding the logits that predict token\n"
    "t + 1 (no header; vocab is the model's vocab_size, printed on stderr and in --json).\n"
    "\n"
    "--parity OTHER... runs MODEL and every OTHER on the prompt (one prefill) and prints, per stage\n"
    "(embedding, each layer's residual stream, final norm, logits), the max abs difference against\n"
    "MODEL, or against golden activations with --refs FILE --refs-prompt NAME (the prompt's ids are\n"
    "then taken from the references). --engines cpu,vulkan runs every model on each engine listed\n"
    "(one column per model and engine); with --prompt-tokens alone it compares MODEL across them.\n"
    "Each difference is shown absolute, then relative to the reference stage's largest |value|.\n"
    "--decode-steps N continues each run for N decode steps after the prompt (one token per forward,\n"
    "as generation runs them: a device engine's decode kernels), every run fed the first run's greedy\n"
    "tokens, and prints per step the first run's margin between its two largest logits, each other\n"
    "run's logits' difference relative to the first's largest |logit|, and whether its argmax agrees.\n"
    "\n"
    "--trace FILE records the prompt's forward pass (embedding, every layer's residual stream, final\n"
    "norm, the logits of every prompt position) zstd-compressed, with the model's canonical digest,\n"
    "the engine, the device and the prompt ids; gptoss-eval --compare-traces A B compares two.\n"
    "\n"
    "An option the chosen mode cannot honour (a sampling option under greedy decoding, a harmony\n"
    "option without harmony rendering, --device on the CPU engine, ...) is an error.";

struct Options {
  std::string model_path, prompt_text, prompt_tokens, dump_logits, trace_path, engine_name = "cpu", effort = "medium";
  std::string developer, date;
  uint64_t max_tokens = 128;
  gptoss::sampling::SamplingParams sampling;
  std::vector<uint32_t> extra_stops;
  bool json_output = false, no_default_stops = false, no_harmony = false, raw = false, show_reasoning = false;
  bool no_system = false, list_devices = false;
  std::optional<uint32_t> device;
  std::string kv_cache = "f32";  // every engine's KV cache type (--kv-cache)
  std::vector<std::string> parity_models;
  std::string refs_path, refs_prompt;
  std::vector<std::string> parity_engines = {"cpu"};
  uint64_t decode_steps = 0;  // --parity: greedy decode steps after the prompt
};

EngineKind engine_kind(const std::string& name) { return *gptoss::runtime::engine_kind_from_name(name); }

// ---- refusing options the mode cannot honour ----

constexpr std::initializer_list<const char*> kGenerationOptions = {
    "--max-tokens", "--temperature", "--top-k", "--top-p", "--min-p", "--seed", "--stop-token",
    "--no-default-stops", "--dump-logits", "--json", "--raw", "--show-reasoning", "--no-harmony", "-p",
    "--reasoning-effort", "--developer", "--no-system", "--date", "--engine"};
constexpr std::initializer_list<const char*> kHarmonyOptions = {"--reasoning-effort", "--developer", "--no-system",
                                                                "--date"};

void refuse_unhonoured(const CLI::App& app, const Options& o, bool parity) {
  if (o.list_devices) {
    refuse_if_given(app, {"model", "--parity", "--refs", "--engines", "-p", "--prompt-tokens", "--device", "--trace"},
                    "cannot be combined with --list-devices, which only lists the Vulkan devices");
    return;
  }
  if (o.model_path.empty()) throw std::invalid_argument("give a model (MODEL or -m MODEL), or --list-devices");
  if (!o.refs_prompt.empty() && o.refs_path.empty()) throw std::invalid_argument("--refs-prompt needs --refs FILE");
  if (parity) {
    refuse_if_given(app, kGenerationOptions,
                    "does not apply to --parity, which runs one prefill per model and engine (engines: --engines)");
    if (o.decode_steps > 0 && !o.refs_path.empty())
      throw std::invalid_argument("--decode-steps continues the first run's greedy choices, and --refs has no run to continue: "
                                  "compare engines or formats with --prompt-tokens");
    refuse_if_given(app, {"--trace"},
                    "records one run, and --parity runs several: trace each run on its own "
                    "(gptoss-run MODEL --trace FILE --engine E) and compare them with gptoss-eval --compare-traces");
    const bool any_vulkan = std::count(o.parity_engines.begin(), o.parity_engines.end(), "vulkan") > 0;
    if (o.device && !any_vulkan) throw std::invalid_argument("--device picks a Vulkan device: add vulkan to --engines");
    return;
  }
  refuse_if_given(app, {"--decode-steps"}, "applies to --parity (and --engines); generation decodes with -n N");
  gptoss::refuse_device_unless_vulkan(o.device, o.engine_name);
  if (o.sampling.temperature <= 0)
    refuse_if_given(app, {"--top-k", "--top-p", "--min-p", "--seed"},
                    "has no effect under greedy decoding (--temperature 0, the default): give --temperature T > 0");
  if (!o.prompt_tokens.empty()) {
    refuse_if_given(app, {"--no-harmony", "--raw", "--show-reasoning"},
                    "applies to -p TEXT; --prompt-tokens output is always shown raw");
    refuse_if_given(app, kHarmonyOptions, "applies to a harmony conversation rendered from -p TEXT, not to --prompt-tokens");
  } else if (o.no_harmony) {
    refuse_if_given(app, kHarmonyOptions, "applies to a harmony conversation, and --no-harmony encodes -p TEXT as is");
    refuse_if_given(app, {"--show-reasoning"}, "shows harmony's analysis channel, and --no-harmony output is raw");
  } else if (o.raw) {
    refuse_if_given(app, {"--show-reasoning"}, "is implied by --raw, which shows every token");
  }
  if (o.max_tokens == 0)
    refuse_if_given(app, {"--temperature", "--top-k", "--top-p", "--min-p", "--seed", "--stop-token", "--no-default-stops"},
                    "has no effect with --max-tokens 0 (prompt only)");
}

// ---- --list-devices ----

int list_devices(bool json_output) {
  const auto devices = gptoss::runtime::list_vulkan_devices();
  if (json_output) {
    nlohmann::ordered_json all = nlohmann::ordered_json::array();
    for (const auto& d : devices)
      all.push_back({{"index", d.index}, {"name", d.name}, {"type", d.type}, {"driver", d.driver},
                     {"memory_bytes", d.memory_bytes}, {"subgroup_size", d.subgroup_size},
                     {"max_storage_buffer_range", d.max_storage_buffer_range}, {"usable", d.usable},
                     {"integer_dot_product", d.integer_dot_product}});
    std::cout << all.dump() << "\n";
    return 0;
  }
  if (devices.empty()) std::printf("no Vulkan device\n");
  for (const auto& d : devices)
    std::printf("%u: %s (%s; %s), %.1f GiB device memory, subgroup %u, storage-buffer range %.1f GiB, integer dot "
                "products %s%s\n",
                d.index, d.name.c_str(), d.type.c_str(), d.driver.c_str(), static_cast<double>(d.memory_bytes) / (1u << 30),
                d.subgroup_size, static_cast<double>(d.max_storage_buffer_range) / (1u << 30),
                d.integer_dot_product.c_str(), d.usable ? "" : " (no compute queue: unusable)");
  return 0;
}

// ---- --parity ----

int parity(const Options& o) {
  gptoss::parity::ParityRequest request;
  if (!o.refs_path.empty()) {
    if (o.refs_prompt.empty()) throw std::invalid_argument("--refs needs --refs-prompt NAME");
    request.reference = gptoss::parity::trace_from_refs(gptoss::SafetensorsFile::open(o.refs_path), o.refs_prompt, &request.prompt);
  } else if (!o.prompt_tokens.empty()) {
    request.prompt = gptoss::run::parse_token_list(o.prompt_tokens);
  } else {
    throw std::invalid_argument("--parity needs --prompt-tokens or --refs");
  }
  request.models = {o.model_path};
  request.models.insert(request.models.end(), o.parity_models.begin(), o.parity_models.end());
  for (const auto& name : o.parity_engines) request.engines.push_back(engine_kind(name));
  request.options.device_index = o.device;  // the Vulkan runs'
  request.options.kv_cache = *gptoss::runtime::kv_cache_type_from_name(o.kv_cache);
  request.decode_steps = o.decode_steps;
  std::fputs(gptoss::parity::parity_report(gptoss::parity::run_parity(request)).c_str(), stdout);
  return 0;
}

// ---- generation (and the prompt's logits with --dump-logits) ----

std::optional<gptoss::Tokenizer> usable_tokenizer(const gptoss::CanonicalModel& model, const Options& o) {
  std::optional<gptoss::Tokenizer> tokenizer;
  if (model.tokenizer) {
    try {
      tokenizer.emplace(*model.tokenizer);
    } catch (const std::exception& e) {
      if (!o.prompt_text.empty()) throw;
      std::cerr << "gptoss-run: the model's tokenizer is unusable, showing token ids: " << e.what() << "\n";
    }
  }
  if (!o.prompt_text.empty() && !tokenizer)
    throw std::invalid_argument("-p needs a tokenizer and " + o.model_path + " has none; use --prompt-tokens");
  return tokenizer;
}

gptoss::harmony::ReasoningEffort effort_from_name(const std::string& name) {
  if (name == "low") return gptoss::harmony::ReasoningEffort::Low;
  if (name == "high") return gptoss::harmony::ReasoningEffort::High;
  return gptoss::harmony::ReasoningEffort::Medium;
}

// The prompt's ids: given directly, the text as is (--no-harmony), or a harmony conversation.
std::vector<uint32_t> prompt_ids(const Options& o, const gptoss::Tokenizer* tokenizer) {
  if (!o.prompt_tokens.empty()) return gptoss::run::parse_token_list(o.prompt_tokens);
  if (o.no_harmony) return tokenizer->encode(o.prompt_text, /*allow_special=*/true);
  gptoss::harmony::SystemContent system;
  system.reasoning_effort = effort_from_name(o.effort);
  if (!o.date.empty()) system.conversation_start_date = o.date;
  std::vector<gptoss::harmony::Message> messages;
  if (!o.no_system) messages.push_back(gptoss::harmony::Message::system(system));
  if (!o.developer.empty()) {
    gptoss::harmony::DeveloperContent content;
    content.instructions = o.developer;
    messages.push_back(gptoss::harmony::Message::developer(content));
  }
  messages.push_back(gptoss::harmony::Message::user(o.prompt_text));
  return gptoss::harmony::render_conversation_for_completion_tokens(*tokenizer, messages);
}

std::vector<uint32_t> stop_tokens(const Options& o, const gptoss::CanonicalModel& model, const gptoss::Tokenizer* tokenizer) {
  std::vector<uint32_t> stops = o.extra_stops;
  if (o.no_default_stops) return stops;
  if (model.config.eos_token_id) stops.push_back(*model.config.eos_token_id);
  if (tokenizer)
    for (const char* special : {"<|return|>", "<|call|>"})
      if (auto id = tokenizer->special_id(special)) stops.push_back(*id);
  return stops;
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

int generate(const Options& o) {
  if (o.prompt_tokens.empty() && o.prompt_text.empty())
    throw std::invalid_argument("give a prompt: -p TEXT or --prompt-tokens ID,ID,...");
  const auto model = gptoss::load_model(o.model_path);
  const auto tokenizer = usable_tokenizer(model, o);
  const gptoss::Tokenizer* tok = tokenizer ? &*tokenizer : nullptr;
  const auto prompt = prompt_ids(o, tok);

  gptoss::runtime::EngineOptions options;
  options.max_context = prompt.size() + o.max_tokens;
  options.device_index = o.device;
  options.kv_cache = *gptoss::runtime::kv_cache_type_from_name(o.kv_cache);
  const auto engine = gptoss::runtime::make_engine(engine_kind(o.engine_name), model, options);
  if (engine->kind() == EngineKind::Vulkan) std::fprintf(stderr, "vulkan: %s\n", engine->device_description().c_str());
  // Prompt ids outside the vocabulary: Engine::forward refuses them, naming the id and its position.

  const bool harmony = !o.prompt_text.empty() && !o.no_harmony;
  const auto mode = !tok ? gptoss::run::DisplayMode::Ids
                    : harmony && !o.raw ? gptoss::run::DisplayMode::Harmony
                                        : gptoss::run::DisplayMode::Raw;
  gptoss::run::TokenDisplay display(mode, tok, o.show_reasoning);
  auto print = [&](const std::string& text) {
    if (o.json_output || text.empty()) return;
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  };

  gptoss::run::GenerationRequest request;
  request.prompt = prompt;
  request.max_tokens = o.max_tokens;
  request.stop.stop_tokens = stop_tokens(o, model, tok);
  std::vector<float> prompt_logits;
  if (!o.dump_logits.empty() || !o.trace_path.empty()) request.prompt_logits = &prompt_logits;
  std::optional<gptoss::parity::TraceRecorder> recorder;
  if (!o.trace_path.empty()) {
    recorder.emplace(o.engine_name + ": " + model_label(o.model_path));
    request.prefill_observer = recorder->observer();
  }
  request.on_token = [&](uint32_t id) { print(display.push(id)); };
  gptoss::sampling::Sampler sampler(o.sampling);
  const auto result = gptoss::run::generate(*engine, sampler, request);
  print(display.finish());
  if (!o.dump_logits.empty()) write_logits(o.dump_logits, prompt_logits);
  if (recorder) {
    recorder->add_logits(std::move(prompt_logits), prompt.size(), engine->vocab_size(), 0);
    const gptoss::parity::TraceHeader header{gptoss::model_digest(gptoss::canonical_digests(model)), o.model_path,
                                             o.engine_name, engine->device_description(), prompt};
    gptoss::parity::write_trace_file(o.trace_path, header, recorder->take());
  }

  const double prompt_rate = static_cast<double>(prompt.size()) / result.prompt_seconds;
  const double generation_rate =
      result.tokens.empty() ? 0.0 : static_cast<double>(result.tokens.size()) / result.generation_seconds;
  if (o.json_output) {
    nlohmann::ordered_json j;
    j["engine"] = o.engine_name;
    j["device"] = engine->device_description();
    j["vocab_size"] = engine->vocab_size();
    j["prompt_tokens"] = prompt;
    j["tokens"] = result.tokens;
    if (tok) j["text"] = gptoss::run::decode_for_display(*tok, result.tokens);
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
    if (!o.dump_logits.empty()) j["dump_logits"] = o.dump_logits;
    if (!o.trace_path.empty()) j["trace"] = o.trace_path;
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }
  std::printf("\n");
  std::fflush(stdout);
  if (auto& parser = display.parser(); parser && !parser->problems().empty())
    std::fprintf(stderr, "harmony: %zu problems parsing the output (e.g. %s); --raw shows every token\n",
                 parser->problems().size(), parser->problems().front().c_str());
  std::fprintf(stderr, "prompt: %zu tokens, %.1f tokens/s; generation: %zu tokens, %.1f tokens/s (stop: %s)\n",
               prompt.size(), prompt_rate, result.tokens.size(), generation_rate, stop_reason_name(result.stop));
  if (!o.dump_logits.empty())
    std::fprintf(stderr, "wrote %zu x %u logits to %s\n", prompt.size(), engine->vocab_size(), o.dump_logits.c_str());
  if (!o.trace_path.empty()) std::fprintf(stderr, "wrote the trace of the prompt's forward pass to %s\n", o.trace_path.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{kDescription};
  Options o;
  const auto& engines = gptoss::runtime::engine_kind_names();
  app.add_option("model,-m,--model", o.model_path, "checkpoint folder, .safetensors, .gguf or model.bin");
  auto* text_option = app.add_option("-p,--prompt", o.prompt_text, "prompt text (needs the model's tokenizer)");
  app.add_option("--prompt-tokens", o.prompt_tokens, "prompt as token ids: ID,ID,...")->excludes(text_option);
  app.add_option("-n,--max-tokens", o.max_tokens, "tokens to generate at most (0: prompt only)")->capture_default_str();
  app.add_option("--temperature,--temp", o.sampling.temperature, "0 = greedy")->capture_default_str();
  app.add_option("--top-k", o.sampling.top_k, "keep the K most likely tokens (0 = off)")->capture_default_str();
  app.add_option("--top-p", o.sampling.top_p, "nucleus: smallest set with probability mass >= P (1 = off)")->capture_default_str();
  app.add_option("--min-p", o.sampling.min_p, "keep tokens with p >= M * p_max (0 = off)")->capture_default_str();
  app.add_option("-s,--seed", o.sampling.seed, "seed of the sampling generator")->capture_default_str();
  app.add_option("--stop-token", o.extra_stops, "extra stop token id (repeatable)");
  app.add_flag("--no-default-stops", o.no_default_stops, "do not stop at EOS, <|return|> or <|call|>");
  app.add_option("--dump-logits", o.dump_logits, "write every prompt position's logits (see above)");
  app.add_option("--trace", o.trace_path, "write every stage of the prompt's forward pass to FILE (see above)");
  app.add_flag("--json", o.json_output, "print one JSON object at the end instead of streaming text");
  app.add_flag("--no-harmony", o.no_harmony, "plain completion: encode -p text as is");
  app.add_flag("--raw", o.raw, "show every generated token as text, specials included");
  app.add_flag("--show-reasoning", o.show_reasoning, "show the analysis channel too");
  app.add_option("--reasoning-effort", o.effort, "harmony system message: low, medium or high")
      ->check(CLI::IsMember({"low", "medium", "high"}))
      ->capture_default_str();
  app.add_option("--developer", o.developer, "harmony developer instructions");
  app.add_flag("--no-system", o.no_system, "harmony without a system message (as the golden prompts)");
  app.add_option("--date", o.date, "harmony conversation start date (YYYY-MM-DD)");
  app.add_option("--engine", o.engine_name, "cpu (f32 reference), cpu-f64 (the reference in double) or vulkan")
      ->check(CLI::IsMember(engines))
      ->capture_default_str();
  app.add_option("--device", o.device, "Vulkan device index (see --list-devices)");
  app.add_option("--kv-cache", o.kv_cache, "the KV cache's type, keys and values alike: f32 or f16 (half the memory)")
      ->check(CLI::IsMember(gptoss::runtime::kv_cache_type_names()))
      ->capture_default_str();
  app.add_flag("--list-devices", o.list_devices, "list the Vulkan devices and exit (with --json: as JSON)");
  app.add_option("--parity", o.parity_models, "compare stage by stage with these models (see above)");
  app.add_option("--refs", o.refs_path, "golden activations (refs-a.safetensors) for --parity");
  app.add_option("--engines", o.parity_engines, "engines --parity runs each model on: cpu, cpu-f64, vulkan (comma separated)")
      ->delimiter(',')
      ->check(CLI::IsMember(engines))
      ->capture_default_str();
  app.add_option("--refs-prompt", o.refs_prompt, "prompt name inside --refs (hi, four, harmony, long, random)");
  app.add_option("--decode-steps", o.decode_steps, "--parity: greedy decode steps after the prompt, compared step by step (see above)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  return gptoss::report_errors("gptoss-run", [&] {
    const bool parity_mode = !o.parity_models.empty() || !o.refs_path.empty() || app.count("--engines") > 0;
    refuse_unhonoured(app, o, parity_mode);
    if (o.list_devices) return list_devices(o.json_output);
    return parity_mode ? parity(o) : generate(o);
  });
}

// gptoss-run: generate with a GPT-OSS model in any format on any engine (the CPU reference engine
// in f32 or f64, the Vulkan engine), compare engines and formats stage by stage (--parity), or
// list the Vulkan devices. Each mode is one function below that hands the work to its library
// (tools/gptoss-run/generation.h, runtime/parity/parity_run.h) and prints what comes back; options
// a mode cannot honour are refused before anything is loaded.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>

#include "convert/model_io.h"
#include "runtime/engine.h"
#include "runtime/eval/chunk_plan.h"
#include "runtime/parity/parity_run.h"
#include "tools/common/cli_options.h"
#include "tools/common/vulkan_options.h"
#include "tools/common/tool_main.h"
#include "tools/gptoss-run/generation.h"
#include "tools/gptoss-run/run_report.h"

namespace {

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
    "--text FILE takes the prompt from FILE as gptoss-eval cuts it (the whole file tokenized, no BOS,\n"
    "special tokens as plain text, chunks of --ctx tokens): chunk --chunk up to and including its\n"
    "position --through (gptoss-eval's \"max at CHUNK:POSITION\"), fed as --prompt-tokens would be;\n"
    "with --parity the stages at that position show where a file's or an engine's largest KL begins.\n"
    "\n"
    "--trace FILE records the prompt's forward pass (embedding, every layer's residual stream after its\n"
    "attention and after the layer, final norm, the logits of every prompt position) zstd-compressed,\n"
    "with the model's canonical digest, the engine, the device and the prompt ids; gptoss-eval\n"
    "--compare-traces A B compares two.\n"
    "\n"
    "An option the chosen mode cannot honour (a sampling option under greedy decoding, a harmony\n"
    "option without harmony rendering, --device on the CPU engine, ...) is an error.";

struct Options {
  gptoss::run::GenerationSetup gen;  // MODEL, the engine, the prompt: generation's, and --parity's too
  bool json_output = false, list_devices = false;
  std::vector<std::string> parity_models;
  std::string refs_path, refs_prompt;
  std::vector<std::string> parity_engines = {"cpu"};
  uint64_t decode_steps = 0;  // --parity: greedy decode steps after the prompt
  // --text FILE: the prompt is chunk `chunk` of FILE as gptoss-eval cuts it, through `through`.
  std::string text_path;
  uint32_t ctx = 512, chunk = 0;
  std::optional<uint32_t> through;
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
    refuse_if_given(app, {"model", "--parity", "--refs", "--engines", "-p", "--prompt-tokens", "--text", "--device", "--trace"},
                    "cannot be combined with --list-devices, which only lists the Vulkan devices");
    return;
  }
  if (o.text_path.empty()) refuse_if_given(app, {"--ctx", "--chunk", "--through"}, "cuts the prompt of --text FILE: give --text");
  if (!o.text_path.empty() && !o.refs_path.empty())
    throw std::invalid_argument("--text gives the prompt, and --refs takes it from the references: give one of them");
  if (o.gen.model_path.empty()) throw std::invalid_argument("give a model (MODEL or -m MODEL), or --list-devices");
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
    if (o.gen.device && !any_vulkan) throw std::invalid_argument("--device picks a Vulkan device: add vulkan to --engines");
    gptoss::refuse_vulkan_options_unless_vulkan(app, any_vulkan);
    return;
  }
  refuse_if_given(app, {"--decode-steps"}, "applies to --parity (and --engines); generation decodes with -n N");
  gptoss::refuse_device_unless_vulkan(o.gen.device, o.gen.engine);
  gptoss::refuse_vulkan_options_unless_vulkan(app, o.gen.engine == "vulkan");
  if (o.gen.sampling.temperature <= 0)
    refuse_if_given(app, {"--top-k", "--top-p", "--min-p", "--seed"},
                    "has no effect under greedy decoding (--temperature 0, the default): give --temperature T > 0");
  if (!o.gen.prompt.tokens.empty() || !o.text_path.empty()) {
    refuse_if_given(app, {"--no-harmony", "--raw", "--show-reasoning"},
                    "applies to -p TEXT; the output of --prompt-tokens or --text is always shown raw");
    refuse_if_given(app, kHarmonyOptions,
                    "applies to a harmony conversation rendered from -p TEXT, not to --prompt-tokens or --text");
  } else if (o.gen.prompt.no_harmony) {
    refuse_if_given(app, kHarmonyOptions, "applies to a harmony conversation, and --no-harmony encodes -p TEXT as is");
    refuse_if_given(app, {"--show-reasoning"}, "shows harmony's analysis channel, and --no-harmony output is raw");
  } else if (o.gen.raw) {
    refuse_if_given(app, {"--show-reasoning"}, "is implied by --raw, which shows every token");
  }
  if (o.gen.max_tokens == 0)
    refuse_if_given(app, {"--temperature", "--top-k", "--top-p", "--min-p", "--seed", "--stop-token", "--no-default-stops"},
                    "has no effect with --max-tokens 0 (prompt only)");
}

// ---- --text FILE: the prompt as gptoss-eval cuts the text ----

// The ids of chunk o.chunk of o.text_path through position o.through (the chunk's last by default),
// tokenized as gptoss-eval tokenizes it: with the tokenizer every model named agrees on.
std::vector<uint32_t> text_prompt(const Options& o) {
  std::vector<std::string> paths = {o.gen.model_path};
  paths.insert(paths.end(), o.parity_models.begin(), o.parity_models.end());
  std::vector<gptoss::CanonicalModel> models;
  std::vector<const gptoss::TokenizerData*> tokenizers;
  models.reserve(paths.size());
  for (const auto& path : paths) {
    models.push_back(gptoss::load_model(path));
    tokenizers.push_back(models.back().tokenizer.get());
  }
  const auto tokens = gptoss::eval::tokenize_text(tokenizers, paths, gptoss::read_text_file(o.text_path));
  const auto plan = gptoss::eval::plan_chunks(tokens.ids.size(), o.ctx, std::nullopt);
  if (o.chunk >= plan.available_chunks)
    throw std::invalid_argument("--chunk " + std::to_string(o.chunk) + ": " + o.text_path + " holds " +
                                std::to_string(plan.available_chunks) + " chunks of " + std::to_string(o.ctx) + " tokens (" +
                                std::to_string(tokens.ids.size()) + " tokens)");
  const uint32_t through = o.through.value_or(o.ctx - 1);
  if (through >= o.ctx)
    throw std::invalid_argument("--through " + std::to_string(through) + " is past a chunk's last position, " +
                                std::to_string(o.ctx - 1) + " (--ctx " + std::to_string(o.ctx) + ")");
  const auto first = tokens.ids.begin() + static_cast<std::ptrdiff_t>(uint64_t{o.chunk} * o.ctx);
  return {first, first + through + 1};
}

// ---- --list-devices ----

int list_devices(bool json_output) {
  const auto devices = gptoss::runtime::list_vulkan_devices();
  if (json_output)
    std::cout << gptoss::run::devices_json(devices).dump() << "\n";
  else
    std::fputs(gptoss::run::devices_text(devices).c_str(), stdout);
  return 0;
}

// ---- --parity ----

int parity(const Options& o) {
  gptoss::parity::ParityRequest request;
  if (!o.refs_path.empty()) {
    if (o.refs_prompt.empty()) throw std::invalid_argument("--refs needs --refs-prompt NAME");
    request.reference = gptoss::parity::trace_from_refs(gptoss::SafetensorsFile::open(o.refs_path), o.refs_prompt, &request.prompt);
  } else if (!o.gen.prompt.ids.empty() || !o.gen.prompt.tokens.empty()) {
    request.prompt = gptoss::run::prompt_ids(o.gen.prompt, nullptr);
  } else {
    throw std::invalid_argument("--parity needs --prompt-tokens, --text or --refs");
  }
  request.models = {o.gen.model_path};
  request.models.insert(request.models.end(), o.parity_models.begin(), o.parity_models.end());
  for (const auto& name : o.parity_engines) request.engines.push_back(engine_kind(name));
  request.options.device_index = o.gen.device;  // the Vulkan runs'
  request.options.vulkan = o.gen.vulkan;
  request.options.prefill_chunk = o.gen.prefill_chunk;
  request.options.kv_cache = *gptoss::runtime::kv_cache_type_from_name(o.gen.kv_cache);
  request.decode_steps = o.decode_steps;
  const auto result = gptoss::parity::run_parity(request);
  std::fputs(gptoss::parity::parity_report(result).c_str(), stdout);
  std::fputs(result.diagnostics.c_str(), stderr);
  return 0;
}

// ---- generation (and the prompt's logits with --dump-logits) ----

int generate(const Options& o) {
  const auto report = gptoss::run::run_generation(o.gen, [&](const std::string& text) {
    if (o.json_output || text.empty()) return;
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  });
  if (o.json_output) {
    std::cout << gptoss::run::generation_json(report).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    std::fputs(report.diagnostics.c_str(), stderr);
    return 0;
  }
  std::printf("\n");
  std::fflush(stdout);
  std::fputs(gptoss::run::generation_summary(report).c_str(), stderr);
  std::fputs(report.diagnostics.c_str(), stderr);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{kDescription};
  Options o;
  const auto& engines = gptoss::runtime::engine_kind_names();
  app.add_option("model,-m,--model", o.gen.model_path, "checkpoint folder, .safetensors, .gguf or model.bin");
  auto* text_option = app.add_option("-p,--prompt", o.gen.prompt.text, "prompt text (needs the model's tokenizer)");
  auto* tokens_option = app.add_option("--prompt-tokens", o.gen.prompt.tokens, "prompt as token ids: ID,ID,...")->excludes(text_option);
  app.add_option("--text", o.text_path, "prompt: a chunk of FILE as gptoss-eval cuts it (see above)")
      ->excludes(text_option)
      ->excludes(tokens_option);
  app.add_option("--ctx", o.ctx, "--text: tokens per chunk (gptoss-eval's --ctx)")->check(CLI::Range(4u, 1u << 20))->capture_default_str();
  app.add_option("--chunk", o.chunk, "--text: the chunk, from 0")->capture_default_str();
  app.add_option("--through", o.through, "--text: the chunk's last position fed (default: ctx - 1)");
  app.add_option("-n,--max-tokens", o.gen.max_tokens, "tokens to generate at most (0: prompt only)")->capture_default_str();
  app.add_option("--temperature,--temp", o.gen.sampling.temperature, "0 = greedy")->capture_default_str();
  app.add_option("--top-k", o.gen.sampling.top_k, "keep the K most likely tokens (0 = off)")->capture_default_str();
  app.add_option("--top-p", o.gen.sampling.top_p, "nucleus: smallest set with probability mass >= P (1 = off)")->capture_default_str();
  app.add_option("--min-p", o.gen.sampling.min_p, "keep tokens with p >= M * p_max (0 = off)")->capture_default_str();
  app.add_option("-s,--seed", o.gen.sampling.seed, "seed of the sampling generator")->capture_default_str();
  app.add_option("--stop-token", o.gen.extra_stops, "extra stop token id (repeatable)");
  app.add_flag("--no-default-stops", o.gen.no_default_stops, "do not stop at EOS, <|return|> or <|call|>");
  app.add_option("--dump-logits", o.gen.dump_logits, "write every prompt position's logits (see above)");
  app.add_option("--trace", o.gen.trace, "write every stage of the prompt's forward pass to FILE (see above)");
  app.add_flag("--json", o.json_output, "print one JSON object at the end instead of streaming text");
  app.add_flag("--no-harmony", o.gen.prompt.no_harmony, "plain completion: encode -p text as is");
  app.add_flag("--raw", o.gen.raw, "show every generated token as text, specials included");
  app.add_flag("--show-reasoning", o.gen.show_reasoning, "show the analysis channel too");
  app.add_option("--reasoning-effort", o.gen.prompt.effort, "harmony system message: low, medium or high")
      ->check(CLI::IsMember({"low", "medium", "high"}))
      ->capture_default_str();
  app.add_option("--developer", o.gen.prompt.developer, "harmony developer instructions");
  app.add_flag("--no-system", o.gen.prompt.no_system, "harmony without a system message (as the golden prompts)");
  app.add_option("--date", o.gen.prompt.date, "harmony conversation start date (YYYY-MM-DD)");
  app.add_option("--engine", o.gen.engine, "cpu (f32 reference), cpu-f64 (the reference in double) or vulkan")
      ->check(CLI::IsMember(engines))
      ->capture_default_str();
  app.add_option("--device", o.gen.device, "Vulkan device index (see --list-devices)");
  gptoss::add_vulkan_options(app, o.gen.vulkan);
  gptoss::add_prefill_chunk_option(app, o.gen.prefill_chunk);
  app.add_option("--kv-cache", o.gen.kv_cache, "the KV cache's type, keys and values alike: f32 or f16 (half the memory)")
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
    if (!o.text_path.empty()) o.gen.prompt.ids = text_prompt(o);
    return parity_mode ? parity(o) : generate(o);
  });
}

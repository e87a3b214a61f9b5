// gptoss-eval: does a converted model still compute the same model? Perplexity of one model over a
// text, every candidate against a reference on the same chunks (KL divergence, top-1 agreement,
// probability of the reference's top token, perplexity of each), the reference's distributions
// saved once and compared against later, and two traces of gptoss-run compared stage by stage.
// The statistics live in runtime/eval; this file reads options, loads, runs and prints.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include "convert/model_io.h"
#include "convert/tokenizer_json.h"
#include "runtime/engine.h"
#include "runtime/eval/chunk_plan.h"
#include "runtime/eval/eval_report.h"
#include "runtime/eval/evaluation.h"
#include "runtime/eval/reference_logits_file.h"
#include "runtime/parity/trace_file.h"
#include "tools/common/cli_options.h"
#include "tools/common/vulkan_options.h"
#include "tools/common/progress_bar.h"
#include "tools/common/tool_main.h"

namespace {

using gptoss::refuse_if_given;
using gptoss::runtime::EngineKind;
using gptoss::runtime::KvCacheType;
using gptoss::runtime::engine_kind_from_name;
using gptoss::runtime::engine_label;
using gptoss::runtime::kv_cache_type_from_name;

constexpr const char* kDescription =
    "gptoss-eval MODEL --text FILE: perplexity of MODEL over the text.\n"
    "gptoss-eval REFERENCE CANDIDATE... --text FILE: every candidate against the reference.\n"
    "gptoss-eval --compare-traces A B: two gptoss-run --trace files, stage by stage.\n"
    "\n"
    "The text is tokenized once with the models' tokenizer (they must agree; no BOS, special tokens\n"
    "as plain text), cut into chunks of --ctx tokens (the tail that fills no chunk is dropped;\n"
    "--chunks N takes the first N), each chunk runs from an empty KV cache, and the logits at\n"
    "positions ctx/2 .. ctx-2 are scored: ctx - 1 - ctx/2 tokens per chunk, as llama.cpp's\n"
    "llama-perplexity does, so perplexities are comparable with its numbers. As it does, each forward\n"
    "takes --batch / --ctx chunks as independent sequences; here every chunk's logits are bit for\n"
    "bit those of the chunk alone, whatever --batch.\n"
    "\n"
    "Per scored position, with P the reference's and Q the candidate's next-token distribution:\n"
    "KL(P||Q) in nats (mean, median, 99th and 99.9th percentile, max over positions), top-1\n"
    "agreement (argmax Q = argmax P), dp = Q(top) - P(top) for the reference's top token (mean and\n"
    "RMS), and each model's perplexity exp(mean -log p(next token)) over its own vocabulary. Models\n"
    "whose vocabularies differ (model.bin keeps 200014 of 201088 rows) are compared on the rows both\n"
    "hold: P and Q are each renormalized over those rows, and the output says so.\n"
    "\n"
    "Where the candidates' engine (--engine, --kv-cache, the Vulkan tuning) is not the reference's, a\n"
    "noise floor row runs REFERENCE's model on the candidates' engine against the reference over\n"
    "--floor-chunks chunks (default 1): what the engines alone differ by. A candidate whose mean KL\n"
    "is within it is flagged: its difference is the engines', not its file's.\n"
    "\n"
    "--save-logits FILE stores the reference's distributions (zstd; header: model digest, tokenizer,\n"
    "text SHA-256, ctx, chunks); --against-logits FILE compares candidates against such a file\n"
    "instead of running REFERENCE, whose digest must match (as must the text and chunking).\n"
    "\n"
    "Exit status: 0 done, 2 an error (compare-traces: 1 when a stage parts beyond --tolerance).";

struct Options {
  std::vector<std::string> models;
  std::string tokenizer_path;  // for models that carry none (synth: specs)
  std::string text_path, engine_name = "cpu", reference_engine_name, save_logits, against_logits;
  std::string kv_cache = "f32", reference_kv_cache;  // the candidates' KV cache type, the reference's (default: the same)
  uint32_t ctx = 512;
  std::optional<uint32_t> batch;  // --batch: tokens per forward, as llama-perplexity's -b
  std::optional<uint32_t> chunks;
  std::vector<uint32_t> devices;  // --device: the Vulkan engines' devices, in turn
  uint32_t floor_chunks = 1;  // the engine's noise floor over this many chunks (0: none)
  gptoss::runtime::VulkanTuning vulkan;  // --profile, --no-coopmat, --tuning ...: every Vulkan engine of the run
  uint32_t prefill_chunk = gptoss::runtime::EngineOptions{}.prefill_chunk;  // --prefill-chunk: the same
  unsigned threads = 0;
  int level = 1;
  bool json_output = false;
  std::vector<std::string> traces;
  double tolerance = 1e-3;
};

// Whether an engine of the run is the Vulkan one (the reference's engine is --engine's unless given).
bool runs_vulkan(const Options& o) { return o.engine_name == "vulkan" || o.reference_engine_name == "vulkan"; }

void refuse_unhonoured(const CLI::App& app, const Options& o) {
  if (!o.traces.empty()) {
    refuse_if_given(app, {"models", "--text", "--ctx", "--batch", "--chunks", "--engine", "--reference-engine", "--device", "--floor-chunks",
                          "--kv-cache", "--reference-kv-cache", "--save-logits", "--against-logits", "--threads", "--level",
                          "--tokenizer"},
                    "does not apply to --compare-traces, which compares two trace files");
    if (o.traces.size() != 2) throw std::invalid_argument("--compare-traces takes two files: A B");
    return;
  }
  refuse_if_given(app, {"--tolerance"}, "applies to --compare-traces");
  if (o.models.empty()) throw std::invalid_argument("give a model (or --compare-traces A B)");
  if (o.text_path.empty()) throw std::invalid_argument("give the text to evaluate: --text FILE");
  if (!o.save_logits.empty() && !o.against_logits.empty())
    throw std::invalid_argument("--save-logits and --against-logits exclude each other: save once, compare later");
  if (!o.against_logits.empty()) {
    refuse_if_given(app, {"--reference-engine", "--reference-kv-cache"},
                    "runs the reference, and --against-logits reads its distributions instead");
    if (o.models.size() < 2)
      throw std::invalid_argument("--against-logits compares candidates: give REFERENCE (checked against the file) and at least one CANDIDATE");
  }
  const bool any_vulkan = runs_vulkan(o);
  if (!o.devices.empty() && !any_vulkan) throw std::invalid_argument("--device picks a Vulkan device: add --engine vulkan");
  gptoss::refuse_vulkan_options_unless_vulkan(app, any_vulkan);
  if (o.save_logits.empty()) refuse_if_given(app, {"--level"}, "sets the zstd level of --save-logits");
}

// ---- --compare-traces ----

int compare_traces(const Options& o) {
  const auto a = gptoss::parity::read_trace_file(o.traces[0]);
  const auto b = gptoss::parity::read_trace_file(o.traces[1]);
  const auto c = gptoss::parity::compare_traces(a, b, o.tolerance);
  if (o.json_output)
    std::cout << gptoss::parity::trace_comparison_json(a, b, c).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
              << "\n";
  else
    std::cout << gptoss::parity::trace_comparison_table(a, b, c);
  return c.first_parting ? 1 : 0;
}

// ---- evaluation ----

struct LoadedModel {
  std::string path, label;
  gptoss::CanonicalModel model;
};

// How tables and JSON name an engine: engine_label, and a Vulkan engine's tuning where it is not the default.
std::string label_of(EngineKind kind, KvCacheType kv_cache, const Options& o) {
  const std::string tuning = kind == EngineKind::Vulkan ? gptoss::tuning_text(o.vulkan) : "";
  return engine_label(kind, kv_cache) + (tuning.empty() ? "" : " [" + tuning + "]");
}

// chunks_per_forward: EvaluationRequest's; the Vulkan engine packs a forward's chunks into one
// submit, so its cache holds all of them.
// devices: the Vulkan engines on one device share its queue, so that one model's forward runs on
// the GPU while another's logits are copied to the host (runtime::SharedDevices); device: --device's
// entry for this engine (none: the best device).
std::unique_ptr<gptoss::runtime::Engine> make_engine(EngineKind kind, KvCacheType kv_cache, const LoadedModel& m,
                                                     const Options& o, uint32_t chunks_per_forward,
                                                     gptoss::runtime::SharedDevices& devices,
                                                     std::optional<uint32_t> device) {
  gptoss::runtime::EngineOptions options;
  options.max_context = kind == EngineKind::Vulkan ? uint64_t{o.ctx} * chunks_per_forward : o.ctx;
  options.kv_cache = kv_cache;
  if (kind == EngineKind::Vulkan) {  // the CPU engine takes neither
    options.device_index = device;
    options.vulkan = o.vulkan;
    options.prefill_chunk = o.prefill_chunk;
  }
  return gptoss::runtime::make_engine(kind, m.model, options, &devices);
}

int evaluate(const Options& o) {
  std::vector<LoadedModel> models;
  std::vector<const gptoss::TokenizerData*> tokenizers;
  for (const auto& path : o.models) {
    models.push_back({path, gptoss::model_label(path), gptoss::load_model(path)});
    auto& model = models.back().model;
    if (!model.tokenizer && !o.tokenizer_path.empty()) model.tokenizer = gptoss::load_tokenizer_json(o.tokenizer_path);
    tokenizers.push_back(model.tokenizer.get());
  }
  const std::string text = gptoss::read_text_file(o.text_path);
  const auto tokens = gptoss::eval::tokenize_text(tokenizers, o.models, text);
  const auto& ids = tokens.ids;
  const auto plan = gptoss::eval::plan_chunks(ids.size(), o.ctx, o.chunks);
  const std::vector<uint32_t> evaluated(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(plan.evaluated_tokens()));
  auto this_run = [&] { return gptoss::eval::run_header(models[0].model, models[0].path, tokens.tokenizer_digest, text, plan, evaluated); };

  const auto engine = *engine_kind_from_name(o.engine_name);
  const auto kv_cache = *kv_cache_type_from_name(o.kv_cache);
  const auto reference_engine = o.reference_engine_name.empty() ? engine : *engine_kind_from_name(o.reference_engine_name);
  const auto reference_kv_cache = o.reference_kv_cache.empty() ? kv_cache : *kv_cache_type_from_name(o.reference_kv_cache);
  gptoss::eval::EvaluationRequest request;
  request.tokens = evaluated;
  request.plan = plan;
  request.threads = o.threads;
  // --batch's whole chunks, at least one and at most the text's; by default llama-perplexity's 2048
  // tokens where a Vulkan engine runs (it packs a forward's chunks into one submit), one chunk where
  // only the CPU engines do (they run a forward's chunks one after the other: more memory, no gain).
  const uint32_t batch = o.batch.value_or(runs_vulkan(o) ? 2048u : o.ctx);
  request.chunks_per_forward = std::clamp(batch / o.ctx, 1u, std::max(1u, plan.chunks));
  std::optional<gptoss::eval::ReferenceLogitsReader> reader;
  gptoss::runtime::SharedDevices devices;
  // --device's list: the Vulkan engines go to its devices in turn, in the order they are made (the
  // reference, the candidates, the noise floor's), so --device 0,1 puts a pair on two GPUs.
  if (o.devices.size() > 1) gptoss::runtime::check_device_list(o.devices, gptoss::runtime::list_vulkan_devices());
  size_t vulkan_engines = 0;
  const auto device_for = [&](EngineKind kind) -> std::optional<uint32_t> {
    if (kind != EngineKind::Vulkan || o.devices.empty()) return std::nullopt;
    return o.devices[vulkan_engines++ % o.devices.size()];
  };
  std::unique_ptr<gptoss::runtime::Engine> reference;
  if (!o.against_logits.empty()) {
    reader.emplace(o.against_logits);
    reader->require_compatible(this_run());
    request.reference_file = &*reader;
  } else {
    reference = make_engine(reference_engine, reference_kv_cache, models[0], o, request.chunks_per_forward, devices,
                            device_for(reference_engine));
    request.reference = reference.get();
  }
  std::vector<std::unique_ptr<gptoss::runtime::Engine>> candidates;
  for (size_t i = 1; i < models.size(); ++i) {
    candidates.push_back(
        make_engine(engine, kv_cache, models[i], o, request.chunks_per_forward, devices, device_for(engine)));
    request.candidates.push_back(candidates.back().get());
  }
  const std::string reference_label = label_of(reference_engine, reference_kv_cache, o);
  const std::string candidate_label = label_of(engine, kv_cache, o);
  // The engine's noise floor, where the candidates' engine is not the reference's.
  std::unique_ptr<gptoss::runtime::Engine> floor;
  const std::string reference_source = reader ? reader->header().engine : reference_label;
  if (o.floor_chunks > 0 && reference_source != candidate_label) {
    floor = make_engine(engine, kv_cache, models[0], o, request.chunks_per_forward, devices, device_for(engine));
    request.floor = floor.get();
    request.floor_chunks = o.floor_chunks;
  }
  std::optional<gptoss::eval::ReferenceLogitsWriter> writer;
  if (!o.save_logits.empty()) {
    auto h = this_run();
    h.engine = reference_label;
    h.device = reference->device_description();
    writer.emplace(o.save_logits, h, o.level);
    request.save = &*writer;
  }

  gptoss::ProgressBar bar("eval", gptoss::stderr_is_terminal() && !o.json_output, gptoss::ProgressBar::Unit::Tokens);
  request.progress = [&](uint64_t done, uint64_t total) { bar.update(done, total); };
  const auto result = gptoss::eval::evaluate(request);
  bar.finish();
  if (reference) std::fputs(reference->diagnostics().c_str(), stderr);
  for (const auto& c : candidates) std::fputs(c->diagnostics().c_str(), stderr);
  if (floor) std::fputs(floor->diagnostics().c_str(), stderr);
  if (writer) writer->commit();

  std::vector<gptoss::eval::RowSubject> subjects;
  for (const auto& m : models)
    subjects.push_back({m.path, m.label, subjects.empty() ? reference_label : candidate_label});
  if (reader) subjects[0].engine = "file " + o.against_logits;
  std::optional<gptoss::eval::RowSubject> floor_subject;
  if (floor) floor_subject = gptoss::eval::RowSubject{models[0].path, "noise floor: " + models[0].label, candidate_label};
  const auto text_sha256 = gptoss::eval::sha256_of({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
  auto report = gptoss::eval::make_report({o.text_path, text_sha256, text.size(), ids.size()}, plan, result, subjects,
                                          floor_subject);
  if (reader) report.against_logits = o.against_logits;
  if (writer) report.saved_logits = {{o.save_logits, std::filesystem::file_size(o.save_logits)}};
  if (o.json_output) {
    std::cout << report_json(report).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }
  std::fputs(report_text(report).c_str(), stdout);
  std::fflush(stdout);
  std::fputs(report_timing(report).c_str(), stderr);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{kDescription};
  Options o;
  const auto& engines = gptoss::runtime::engine_kind_names();
  app.add_option("models", o.models, "REFERENCE [CANDIDATE...]: checkpoint folders, .gguf or model.bin");
  app.add_option("--text", o.text_path, "the text to evaluate (UTF-8)");
  app.add_option("--tokenizer", o.tokenizer_path,
                 "tokenizer.json for the models that carry no tokenizer (synth: specs; a model's own wins)")
      ->check(CLI::ExistingFile);
  app.add_option("--ctx,-c", o.ctx, "tokens per chunk")->capture_default_str();
  app.add_option("--batch,-b", o.batch,
                 "tokens per forward, as llama-perplexity's -b: batch / ctx chunks run as one forward of independent "
                 "sequences, every chunk's logits the same as alone (default: 2048 where an engine is the Vulkan one, "
                 "which packs them into one submit; else ctx)")
      ->check(CLI::Range(1u, 1u << 20));
  app.add_option("--chunks", o.chunks, "evaluate the first N chunks (default: every chunk the text holds)");
  app.add_option("--engine", o.engine_name, "cpu, cpu-f64 or vulkan")->check(CLI::IsMember(engines))->capture_default_str();
  app.add_option("--reference-engine", o.reference_engine_name, "the reference's engine (default: --engine)")
      ->check(CLI::IsMember(engines));
  app.add_option("--device", o.devices,
                 "Vulkan device index (gptoss-run --list-devices), or a list (0,1) that the models' Vulkan engines go "
                 "to in turn: the reference, the candidates, the noise floor's; devices of one name and driver")
      ->delimiter(',');
  gptoss::add_vulkan_options(app, o.vulkan);
  gptoss::add_prefill_chunk_option(app, o.prefill_chunk);
  app.add_option("--floor-chunks", o.floor_chunks,
                 "the engine's noise floor: the reference model on the candidates' engine against the reference "
                 "over this many chunks, where the two engines differ (0: none)")
      ->capture_default_str();
  app.add_option("--kv-cache", o.kv_cache, "the candidates' KV cache type: f32 or f16")
      ->check(CLI::IsMember(gptoss::runtime::kv_cache_type_names()))
      ->capture_default_str();
  app.add_option("--reference-kv-cache", o.reference_kv_cache, "the reference's KV cache type (default: --kv-cache)")
      ->check(CLI::IsMember(gptoss::runtime::kv_cache_type_names()));
  app.add_option("--save-logits", o.save_logits, "store the reference's distributions in FILE");
  app.add_option("--against-logits", o.against_logits, "compare the candidates against the distributions in FILE");
  app.add_option("--level", o.level, "zstd level of --save-logits (1..19)")->check(CLI::Range(1, 19))->capture_default_str();
  app.add_option("--threads", o.threads, "threads for the statistics (0: one per core)")->capture_default_str();
  app.add_flag("--json", o.json_output, "print one JSON object instead of the table");
  app.add_option("--compare-traces", o.traces, "A B: two gptoss-run --trace files")->expected(2);
  app.add_option("--tolerance", o.tolerance, "--compare-traces: largest difference allowed, relative to the stage's largest |value|")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  return gptoss::report_errors("gptoss-eval", [&] {
    refuse_unhonoured(app, o);
    return o.traces.empty() ? evaluate(o) : compare_traces(o);
  });
}

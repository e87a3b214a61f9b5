// gptoss-eval: does a converted model still compute the same model? Perplexity of one model over a
// text, every candidate against a reference on the same chunks (KL divergence, top-1 agreement,
// probability of the reference's top token, perplexity of each), the reference's distributions
// saved once and compared against later, and two traces of gptoss-run compared stage by stage.
// The statistics live in runtime/eval; this file reads options, loads, runs and prints.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "convert/model_io.h"
#include "formats/core/mapped_file.h"
#include "runtime/engine.h"
#include "runtime/eval/chunk_plan.h"
#include "runtime/eval/evaluation.h"
#include "runtime/eval/reference_logits_file.h"
#include "runtime/parity/trace_file.h"
#include "runtime/tokenizer/tokenizer.h"
#include "tools/common/cli_options.h"
#include "tools/common/progress_bar.h"
#include "tools/common/tool_main.h"
#include "verify/canonical_digest.h"

namespace {

using gptoss::model_label;
using gptoss::refuse_if_given;
using gptoss::runtime::EngineKind;

constexpr const char* kDescription =
    "gptoss-eval MODEL --text FILE: perplexity of MODEL over the text.\n"
    "gptoss-eval REFERENCE CANDIDATE... --text FILE: every candidate against the reference.\n"
    "gptoss-eval --compare-traces A B: two gptoss-run --trace files, stage by stage.\n"
    "\n"
    "The text is tokenized once with the models' tokenizer (they must agree; no BOS, special tokens\n"
    "as plain text), cut into chunks of --ctx tokens (the tail that fills no chunk is dropped;\n"
    "--chunks N takes the first N), each chunk runs from an empty KV cache as one forward, and\n"
    "the logits at positions ctx/2 .. ctx-2 are scored: ctx - 1 - ctx/2 tokens per chunk, as\n"
    "llama.cpp's llama-perplexity does, so perplexities are comparable with its numbers.\n"
    "\n"
    "Per scored position, with P the reference's and Q the candidate's next-token distribution:\n"
    "KL(P||Q) in nats (mean, median, 99th and 99.9th percentile, max over positions), top-1\n"
    "agreement (argmax Q = argmax P), dp = Q(top) - P(top) for the reference's top token (mean and\n"
    "RMS), and each model's perplexity exp(mean -log p(next token)) over its own vocabulary. Models\n"
    "whose vocabularies differ (model.bin keeps 200014 of 201088 rows) are compared on the rows both\n"
    "hold: P and Q are each renormalized over those rows, and the output says so.\n"
    "\n"
    "--save-logits FILE stores the reference's distributions (zstd; header: model digest, tokenizer,\n"
    "text SHA-256, ctx, chunks); --against-logits FILE compares candidates against such a file\n"
    "instead of running REFERENCE, whose digest must match (as must the text and chunking).\n"
    "\n"
    "Exit status: 0 done, 2 an error (compare-traces: 1 when a stage parts beyond --tolerance).";

struct Options {
  std::vector<std::string> models;
  std::string text_path, engine_name = "cpu", reference_engine_name, save_logits, against_logits;
  std::string kv_cache = "f32", reference_kv_cache;  // the candidates' KV cache type, the reference's (default: the same)
  uint32_t ctx = 512;
  std::optional<uint32_t> chunks, device;
  unsigned threads = 0;
  int level = 1;
  bool json_output = false;
  std::vector<std::string> traces;
  double tolerance = 1e-3;
};

void refuse_unhonoured(const CLI::App& app, const Options& o) {
  if (!o.traces.empty()) {
    refuse_if_given(app, {"models", "--text", "--ctx", "--chunks", "--engine", "--reference-engine", "--device",
                          "--kv-cache", "--reference-kv-cache", "--save-logits", "--against-logits", "--threads", "--level"},
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
  const bool any_vulkan = o.engine_name == "vulkan" || o.reference_engine_name == "vulkan";
  if (o.device && !any_vulkan) throw std::invalid_argument("--device picks a Vulkan device: add --engine vulkan");
  if (o.save_logits.empty()) refuse_if_given(app, {"--level"}, "sets the zstd level of --save-logits");
}

// ---- --compare-traces ----

int compare_traces(const Options& o) {
  const auto a = gptoss::parity::read_trace_file(o.traces[0]);
  const auto b = gptoss::parity::read_trace_file(o.traces[1]);
  const auto c = gptoss::parity::compare_traces(a, b, o.tolerance);
  if (o.json_output) {
    nlohmann::ordered_json j;
    j["a"] = {{"label", a.trace.label}, {"engine", a.header.engine}, {"device", a.header.device}, {"model_digest", a.header.model_digest}};
    j["b"] = {{"label", b.trace.label}, {"engine", b.header.engine}, {"device", b.header.device}, {"model_digest", b.header.model_digest}};
    j["tolerance"] = c.tolerance;
    j["stages"] = nlohmann::ordered_json::array();
    for (const auto& d : c.stages)
      j["stages"].push_back({{"stage", d.stage}, {"in_both", d.in_both}, {"rows", d.rows}, {"cols", d.cols},
                             {"largest", d.largest}, {"max_abs_diff", d.max_abs_diff}, {"relative", d.relative},
                             {"worst_position", d.worst_row}, {"worst_column", d.worst_col}, {"parts", d.parts}});
    j["first_parting"] = c.first_parting ? nlohmann::ordered_json(c.stages[*c.first_parting].stage) : nlohmann::ordered_json();
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    std::cout << gptoss::parity::trace_comparison_table(a, b, c);
  }
  return c.first_parting ? 1 : 0;
}

// ---- evaluation ----

struct LoadedModel {
  std::string path, label;
  gptoss::CanonicalModel model;
  std::optional<std::string> tokenizer_digest;
};

std::string read_text(const std::string& path) {
  const auto file = gptoss::MappedFile::open(path);
  const auto bytes = file->bytes();
  return {bytes.begin(), bytes.end()};
}

// The text's ids, with the tokenizer every model that has one agrees on.
std::vector<uint32_t> tokenize(const std::vector<LoadedModel>& models, const std::string& text, std::string& digest) {
  const LoadedModel* first = nullptr;
  for (const auto& m : models) {
    if (!m.tokenizer_digest) continue;
    if (!first) {
      first = &m;
      digest = *m.tokenizer_digest;
    } else if (*m.tokenizer_digest != digest) {
      throw std::invalid_argument(m.path + ": its tokenizer differs from " + first->path +
                                  "'s (ordinary tokens or pre-tokenizer), so the text would not be the same tokens");
    }
  }
  if (!first) throw std::invalid_argument("no model has a tokenizer to turn the text into tokens");
  return gptoss::Tokenizer(*first->model.tokenizer).encode(text, /*allow_special=*/false);
}

std::unique_ptr<gptoss::runtime::Engine> make_engine(const std::string& kind, const std::string& kv_cache,
                                                     const LoadedModel& m, const Options& o) {
  const EngineKind engine_kind = *gptoss::runtime::engine_kind_from_name(kind);
  gptoss::runtime::EngineOptions options;
  options.max_context = o.ctx;
  options.kv_cache = *gptoss::runtime::kv_cache_type_from_name(kv_cache);
  if (engine_kind == EngineKind::Vulkan) options.device_index = o.device;  // the CPU engine takes none
  return gptoss::runtime::make_engine(engine_kind, m.model, options);
}

std::string digest_of(const gptoss::CanonicalModel& model) {
  return gptoss::model_digest(gptoss::canonical_digests(model));
}

std::string format_kl(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3e", v);
  return text;
}

nlohmann::ordered_json nll_json(const gptoss::eval::NllStats& s) {
  return {{"perplexity", s.perplexity()}, {"perplexity_uncertainty", s.perplexity_uncertainty()},
          {"mean_nll", s.mean()}, {"tokens", s.count}};
}

int evaluate(const Options& o) {
  std::vector<LoadedModel> models;
  for (const auto& path : o.models) {
    LoadedModel m{path, model_label(path), gptoss::load_model(path), std::nullopt};
    if (m.model.tokenizer) m.tokenizer_digest = gptoss::eval::tokenizer_digest(*m.model.tokenizer);
    models.push_back(std::move(m));
  }
  const std::string text = read_text(o.text_path);
  const std::string text_sha = gptoss::eval::sha256_of({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
  std::string tokenizer_digest;
  const auto ids = tokenize(models, text, tokenizer_digest);
  const auto plan = gptoss::eval::plan_chunks(ids.size(), o.ctx, o.chunks);
  const std::vector<uint32_t> evaluated(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(plan.evaluated_tokens()));

  const std::string reference_engine = o.reference_engine_name.empty() ? o.engine_name : o.reference_engine_name;
  const std::string reference_kv_cache = o.reference_kv_cache.empty() ? o.kv_cache : o.reference_kv_cache;
  auto engine_label = [](const std::string& engine, const std::string& kv_cache) {
    return gptoss::runtime::engine_label(*gptoss::runtime::engine_kind_from_name(engine),
                                         *gptoss::runtime::kv_cache_type_from_name(kv_cache));
  };
  const std::string reference_label = engine_label(reference_engine, reference_kv_cache);
  const std::string candidate_label = engine_label(o.engine_name, o.kv_cache);
  gptoss::eval::EvaluationRequest request;
  request.tokens = evaluated;
  request.plan = plan;
  request.threads = o.threads;

  std::optional<gptoss::eval::ReferenceLogitsReader> reader;
  std::unique_ptr<gptoss::runtime::Engine> reference;
  if (!o.against_logits.empty()) {
    reader.emplace(o.against_logits);
    const auto& h = reader->header();
    reader->require("text.sha256", h.text_sha256, text_sha, "the text with SHA-256");
    reader->require("tokenizer.digest", h.tokenizer_digest, tokenizer_digest, "the tokenizer with digest");
    reader->require("chunking.ctx", std::to_string(h.ctx), std::to_string(plan.ctx), "--ctx");
    reader->require("chunking.chunks", std::to_string(h.chunks), std::to_string(plan.chunks), "--chunks");
    reader->require("model.vocab_size", std::to_string(h.vocab_size), std::to_string(models[0].model.config.vocab_size),
                    "a vocabulary of");
    if (h.tokens != evaluated) reader->require("tokens", "other token ids", "these", "the text as");
    reader->require("model.digest", h.model_digest, digest_of(models[0].model), "the model with canonical digest");
    request.reference_file = &*reader;
  } else {
    reference = make_engine(reference_engine, reference_kv_cache, models[0], o);
    request.reference = reference.get();
  }
  std::vector<std::unique_ptr<gptoss::runtime::Engine>> candidates;
  for (size_t i = 1; i < models.size(); ++i) {
    candidates.push_back(make_engine(o.engine_name, o.kv_cache, models[i], o));
    request.candidates.push_back(candidates.back().get());
  }

  std::optional<gptoss::eval::ReferenceLogitsWriter> writer;
  if (!o.save_logits.empty()) {
    gptoss::eval::ReferenceLogitsHeader h;
    h.model_digest = digest_of(models[0].model);
    h.model_source = models[0].path;
    h.vocab_size = reference->vocab_size();
    h.tokenizer_digest = tokenizer_digest;
    h.text_sha256 = text_sha;
    h.text_bytes = text.size();
    h.ctx = plan.ctx;
    h.chunks = plan.chunks;
    h.engine = reference_label;
    h.device = reference->device_description();
    h.tokens = evaluated;
    writer.emplace(o.save_logits, h, o.level);
    request.save = &*writer;
  }

  gptoss::ProgressBar bar("eval", gptoss::stderr_is_terminal() && !o.json_output, gptoss::ProgressBar::Unit::Tokens);
  request.progress = [&](uint64_t done, uint64_t total) { bar.update(done, total); };
  const auto result = gptoss::eval::evaluate(request);
  bar.finish();
  if (writer) writer->commit();

  const double tokens_per_second = static_cast<double>(plan.evaluated_tokens()) / result.seconds;
  const std::string reference_source = reader ? "file " + o.against_logits : reference_label;
  if (o.json_output) {
    nlohmann::ordered_json j;
    j["text"] = {{"path", o.text_path}, {"bytes", text.size()}, {"sha256", text_sha}, {"tokens", ids.size()}};
    j["chunking"] = {{"ctx", plan.ctx}, {"chunks", plan.chunks}, {"available_chunks", plan.available_chunks},
                     {"first_scored", plan.first_scored()}, {"scored_tokens", plan.scored_tokens()}, {"bos", false}};
    j["reference"] = {{"model", models[0].path}, {"engine", reference_source}, {"vocab_size", result.reference_vocab}};
    j["reference"].update(nll_json(result.reference));
    j["candidates"] = nlohmann::ordered_json::array();
    for (size_t k = 0; k < result.candidates.size(); ++k) {
      const auto& c = result.candidates[k];
      const auto s = c.summary();
      nlohmann::ordered_json cj = {{"model", models[k + 1].path}, {"engine", candidate_label}, {"vocab_size", c.vocab_size},
                                   {"shared_rows", c.shared_rows}, {"renormalized", c.shared_rows != c.vocab_size || c.shared_rows != result.reference_vocab}};
      cj.update(nll_json(c.nll));
      cj["kl"] = {{"mean", s.kl_mean}, {"median", s.kl_median}, {"p99", s.kl_p99}, {"p99_9", s.kl_p999}, {"max", s.kl_max}};
      cj["top1_agreement"] = s.top1_agreement;
      cj["dp_mean"] = s.dp_mean;
      cj["dp_rms"] = s.dp_rms;
      j["candidates"].push_back(cj);
    }
    j["seconds"] = result.seconds;
    j["forward_seconds"] = result.forward_seconds;
    j["statistics_seconds"] = result.statistics_seconds;
    j["tokens_per_second"] = tokens_per_second;
    if (writer) j["saved_logits"] = {{"path", o.save_logits}, {"bytes", std::filesystem::file_size(o.save_logits)}};
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }

  std::printf("text: %s (%zu bytes, sha256 %.16s...), %zu tokens (no BOS)\n", o.text_path.c_str(), text.size(),
              text_sha.c_str(), ids.size());
  std::printf("chunks: %u of %u tokens (the text holds %u), each scored on positions %u..%u: %llu scored tokens\n",
              plan.chunks, plan.ctx, plan.available_chunks, plan.first_scored(), plan.ctx - 2,
              static_cast<unsigned long long>(plan.scored_tokens()));
  const auto& ref = result.reference;
  std::printf("reference: %s (%s): PPL = %.4f +/- %.4f\n", models[0].label.c_str(), reference_source.c_str(),
              ref.perplexity(), ref.perplexity_uncertainty());
  if (!result.candidates.empty()) {
    std::printf("\n| candidate | engine | PPL | mean KL | median KL | p99 KL | p99.9 KL | max KL | top-1 agree | mean dp | RMS dp |\n"
                "|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t k = 0; k < result.candidates.size(); ++k) {
      const auto& c = result.candidates[k];
      const auto s = c.summary();
      std::printf("| %s | %s | %.4f | %s | %s | %s | %s | %s | %.2f%% | %+.3e | %.3e |\n", models[k + 1].label.c_str(),
                  candidate_label.c_str(), c.nll.perplexity(), format_kl(s.kl_mean).c_str(), format_kl(s.kl_median).c_str(),
                  format_kl(s.kl_p99).c_str(), format_kl(s.kl_p999).c_str(), format_kl(s.kl_max).c_str(),
                  100 * s.top1_agreement, s.dp_mean, s.dp_rms);
    }
    std::printf("\nKL = KL(reference || candidate) in nats per token; dp = P_candidate(t) - P_reference(t) for the "
                "reference's top token t.\n");
    for (size_t k = 0; k < result.candidates.size(); ++k) {
      const auto& c = result.candidates[k];
      if (c.shared_rows != c.vocab_size || c.shared_rows != result.reference_vocab)
        std::printf("note: %s has %u vocabulary rows, the reference %u: compared on rows 0..%u, both distributions "
                    "renormalized over them (its PPL is over its own %u rows)\n",
                    models[k + 1].label.c_str(), c.vocab_size, result.reference_vocab, c.shared_rows - 1, c.vocab_size);
    }
  }
  if (reader)
    std::printf("note: the reference's distributions come from %s (f16 log-probabilities: KL to ~1e-6, see docs/eval.md)\n",
                o.against_logits.c_str());
  if (writer)
    std::printf("saved the reference's distributions to %s (%.1f MB, %.1f KB per scored token)\n", o.save_logits.c_str(),
                static_cast<double>(std::filesystem::file_size(o.save_logits)) / 1e6,
                static_cast<double>(std::filesystem::file_size(o.save_logits)) / 1e3 / static_cast<double>(plan.scored_tokens()));
  std::fflush(stdout);
  std::fprintf(stderr, "%llu tokens in %.2f s: %.1f tokens/s (forwards %.2f s, statistics %.2f s)\n",
               static_cast<unsigned long long>(plan.evaluated_tokens()), result.seconds, tokens_per_second,
               result.forward_seconds, result.statistics_seconds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{kDescription};
  Options o;
  const auto& engines = gptoss::runtime::engine_kind_names();
  app.add_option("models", o.models, "REFERENCE [CANDIDATE...]: checkpoint folders, .gguf or model.bin");
  app.add_option("--text", o.text_path, "the text to evaluate (UTF-8)");
  app.add_option("--ctx,-c", o.ctx, "tokens per chunk")->capture_default_str();
  app.add_option("--chunks", o.chunks, "evaluate the first N chunks (default: every chunk the text holds)");
  app.add_option("--engine", o.engine_name, "cpu, cpu-f64 or vulkan")->check(CLI::IsMember(engines))->capture_default_str();
  app.add_option("--reference-engine", o.reference_engine_name, "the reference's engine (default: --engine)")
      ->check(CLI::IsMember(engines));
  app.add_option("--device", o.device, "Vulkan device index (gptoss-run --list-devices)");
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

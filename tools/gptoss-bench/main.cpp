// gptoss-bench: prefill and decode speed of any GPT-OSS model on any engine, with llama.cpp's
// llama-bench's tests, columns and output formats, so the two tools' results sit side by side.
// Each model is loaded once, its engine made once (KV cache for the largest test), and every test
// run on it; results are printed as each test finishes, progress goes to stderr.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>

#include "convert/model_io.h"
#include "formats/core/atomic_file.h"
#include "runtime/engine.h"
#include "tools/common/cli_options.h"
#include "tools/common/vulkan_options.h"
#include "tools/common/tool_main.h"
#include "tools/gptoss-bench/bench_report.h"
#include "tools/gptoss-bench/bench_tests.h"
#include "tools/gptoss-bench/model_summary.h"

namespace {

using namespace gptoss::bench;
using gptoss::runtime::EngineKind;

constexpr const char* kDescription =
    "Measure prefill and decode speed of GPT-OSS models (safetensors folder, .gguf, model.bin, or a\n"
    "model spec synth:a / synth:20b / synth:120b, generated on the fly) as llama.cpp's llama-bench does.\n"
    "\n"
    "Tests: ppP runs P prompt tokens in one forward pass (logits of the last row); tgN runs N forward\n"
    "passes of one token each (each step's logits in host memory before the next step, where the\n"
    "engine put them, as llama.cpp's llama_get_logits; or the argmax alone with --greedy).\n"
    "With -d D both start from a KV cache already holding D tokens, prefilled untimed\n"
    "(\"pp512 @ d4096\"). Each test runs untimed to warm up (again until --warmup-seconds have passed),\n"
    "then -r times, each run from an empty cache;\n"
    "t/s is the mean ± sample standard deviation of the runs' tokens per second. Tokens are ids from\n"
    "a fixed-seed generator over the vocabulary. -p, -n, -d take lists (-p 512,1024 or -p 512 -p 1024);\n"
    "0 skips that kind of test. Tests run for every depth: prefill tests first, then decode tests.\n"
    "Several models, KV cache types (--kv-cache f32,f16) and Vulkan variants (--variant NAME:KEYS, the\n"
    "keys of --tuning on top of the options: --variant portable:coopmat=off --variant splits8:attention_splits=8;\n"
    "NAME: alone is the options' engine) run in one process, every combination, each result named by\n"
    "its kv, variant and tuning.\n"
    "\n"
    "size: bytes of the model's tensors in the encoding it holds them in. params: elements of every\n"
    "tensor, an MXFP4 expert tensor counting 2 parameters per byte of blocks and none for its scales\n"
    "(as llama-bench counts a GGUF). kv: the KV cache's type (--kv-cache). dev mem: device memory the\n"
    "engine holds (weights, KV cache,\n"
    "scratch). -o json and csv add llama-bench's fields (avg_ts, stddev_ts, samples_ns, ...).\n"
    "Exit status: 0, or 2 when a model cannot be read or an engine cannot run it (the results of\n"
    "the tests that finished are still printed).";

struct Options {
  std::vector<std::string> models;
  std::vector<uint64_t> prompt_sizes = {512}, gen_sizes = {128}, depths = {0};
  uint32_t repetitions = 5;
  std::string engine = "vulkan", output = "md";
  std::vector<std::string> kv_caches = {"f32"};
  std::vector<std::string> variants;  // NAME:KEYS (--variant); none: the options' tuning alone
  std::optional<uint32_t> device;
  gptoss::runtime::VulkanTuning vulkan;  // --profile, --no-coopmat, --tuning ...
  std::vector<std::string> saves;
  bool no_warmup = false, greedy = false, quiet = false;
  double warmup_seconds = 1.0;
  uint32_t prefill_chunk = gptoss::runtime::EngineOptions{}.prefill_chunk;
};

void progress(const Options& o, const std::string& line) {
  if (!o.quiet) std::fprintf(stderr, "gptoss-bench: %s\n", line.c_str());
}

std::string format_double(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

// Where results go: stdout in -o's format as they arrive, and every --save file rewritten (atomically,
// a whole document each time) after each result, so a run stopped from outside (a timeout, a
// machine taken back) leaves the results it finished; after an error too.
class Outputs {
 public:
  Outputs(OutputFormat stdout_format, std::vector<std::pair<std::string, OutputFormat>> files)
      : format_(stdout_format), files_(std::move(files)) {
    print(render_header(format_));
  }
  void add(BenchResult result) {
    print(render_row(format_, result, results_.empty()));
    results_.push_back(std::move(result));
    save();
  }
  // The footer, and the files where no result has written them (a run that finished none).
  void finish() {
    print(render_footer(format_));
    if (results_.empty()) save();
  }

 private:
  void save() const {
    for (const auto& [path, format] : files_) {
      const std::string text = render_all(format, results_);
      gptoss::AtomicFileWriter out(path);
      out.write(text.data(), text.size());
      out.commit();
    }
  }
  static void print(const std::string& text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  }
  OutputFormat format_;
  std::vector<std::pair<std::string, OutputFormat>> files_;
  std::vector<BenchResult> results_;
};

std::vector<std::pair<std::string, OutputFormat>> save_files(const Options& o) {
  std::vector<std::pair<std::string, OutputFormat>> files;
  for (const auto& path : o.saves) {
    const auto format = output_format_for_file(path);
    if (!format) throw std::invalid_argument("--save " + path + ": the file name must end in .md, .json or .csv");
    files.emplace_back(path, *format);
  }
  return files;
}

void check_options(const CLI::App& app, const Options& o, const std::vector<BenchTest>& tests) {
  if (o.models.empty()) throw std::invalid_argument("give a model (MODEL... or -m MODEL)");
  if (tests.empty()) throw std::invalid_argument("no test to run: -p and -n are all 0");
  if (o.repetitions == 0) throw std::invalid_argument("-r 0 runs no repetition: give -r 1 or more");
  gptoss::refuse_device_unless_vulkan(o.device, o.engine);
  gptoss::refuse_vulkan_options_unless_vulkan(app, o.engine == "vulkan");
  const bool any_decode = std::any_of(tests.begin(), tests.end(), [](const BenchTest& t) { return t.kind == TestKind::Decode; });
  if (o.greedy && !any_decode) throw std::invalid_argument("--greedy changes decode tests and -n 0 runs none");
  if (!o.variants.empty() && o.engine != "vulkan")
    throw std::invalid_argument("--variant sets how the Vulkan engine computes, and --engine is " + o.engine);
}

// A --variant's name and its tuning (the options' tuning with its keys on top).
struct Variant {
  std::string name;
  gptoss::runtime::VulkanTuning tuning;
};
std::vector<Variant> variants_of(const Options& o) {
  if (o.variants.empty()) return {{"", o.vulkan}};
  std::vector<Variant> all;
  for (const auto& text : o.variants) {
    const size_t colon = text.find(':');
    if (colon == 0 || colon == std::string::npos)
      throw std::invalid_argument("--variant " + text + ": expected NAME:KEYS (NAME: for the options' engine)");
    Variant v{text.substr(0, colon), o.vulkan};
    gptoss::apply_tuning(text.substr(colon + 1), v.tuning);
    for (const auto& other : all)
      if (other.name == v.name) throw std::invalid_argument("--variant " + v.name + " is given twice");
    all.push_back(std::move(v));
  }
  return all;
}

void bench_model(const Options& o, const std::string& path, const std::string& kv_cache, const Variant& variant,
                 const std::vector<BenchTest>& tests, Outputs& outputs) {
  const EngineKind kind = *gptoss::runtime::engine_kind_from_name(o.engine);
  const auto model = gptoss::load_model(path);
  const auto summary = summarize_model(model);
  const uint64_t positions = positions_needed(tests);
  if (positions > model.config.max_position_embeddings)
    throw std::invalid_argument("the largest test needs " + std::to_string(positions) + " positions (-d + -p or -n) and " +
                                path + " holds " + std::to_string(model.config.max_position_embeddings));
  progress(o, path + ": " + summary.type + ", " + format_double("%.2f GiB", static_cast<double>(summary.size_bytes) / (1u << 30)) +
                  "; making the " + o.engine + " engine for " + std::to_string(positions) + " positions, " + kv_cache +
                  " KV cache" + (variant.name.empty() ? "" : ", variant " + variant.name));

  gptoss::runtime::EngineOptions engine_options;
  engine_options.max_context = positions;
  engine_options.device_index = o.device;
  if (kind == EngineKind::Vulkan) {
    engine_options.prefill_chunk = o.prefill_chunk;
    engine_options.vulkan = variant.tuning;
  }
  engine_options.kv_cache = *gptoss::runtime::kv_cache_type_from_name(kv_cache);
  std::unique_ptr<gptoss::runtime::Engine> engine;
  const auto start = std::chrono::steady_clock::now();
  try {
    engine = gptoss::runtime::make_engine(kind, model, engine_options);
  } catch (const std::exception& e) {
    throw std::runtime_error("the " + o.engine + " engine cannot run " + path + ": " + e.what());
  }
  const double load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  progress(o, path + " on " + engine->device_description() + ": ready in " + format_double("%.1f s", load_seconds));

  RunOptions run_options;
  run_options.repetitions = o.repetitions;
  run_options.warmup = !o.no_warmup;
  run_options.warmup_seconds = o.warmup_seconds;
  run_options.decode_output = o.greedy ? DecodeOutput::Argmax : DecodeOutput::Logits;
  const std::string cpu_info = cpu_model_name();
  const std::string format = gptoss::format_name(gptoss::detect_input_format(path));
  for (const auto& test : tests) {
    BenchResult r;
    r.model_filename = path;
    r.model_format = format;
    r.model = summary;
    r.engine = o.engine;
    r.backend = kind == EngineKind::Vulkan ? "Vulkan" : "CPU";
    r.device = engine->device_description();
    r.kv_cache = kv_cache;
    r.n_ubatch = kind == EngineKind::Vulkan ? engine_options.prefill_chunk : 0;
    r.variant = variant.name;
    r.tuning = kind == EngineKind::Vulkan ? gptoss::tuning_text(variant.tuning) : "";
    r.cpu_info = cpu_info;
    r.load_seconds = load_seconds;
    r.test = test;
    r.decode_output = decode_output_name(run_options.decode_output);
    r.warmup = run_options.warmup;
    r.warmup_seconds = run_options.warmup ? run_options.warmup_seconds : 0.0;
    r.test_time = utc_now_iso8601();
    try {
      r.samples_ns = run_test(*engine, test, run_options, [&](const std::string& what, double seconds, double rate) {
        progress(o, "  " + test.name() + " " + what + ": " + format_double("%.3f s", seconds) + ", " +
                        format_double("%.2f t/s", rate));
      });
    } catch (const std::exception& e) {
      throw std::runtime_error(test.name() + " of " + path + " on the " + o.engine + " engine failed: " + e.what());
    }
    r.device_memory_bytes = engine->device_memory_bytes();
    outputs.add(std::move(r));
  }
  std::fputs(engine->diagnostics().c_str(), stderr);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{kDescription};
  Options o;
  app.add_option("model,-m,--model", o.models, "models to measure, one after the other");
  app.add_option("-p,--n-prompt", o.prompt_sizes, "prompt sizes of the prefill tests (0: none)")
      ->delimiter(',')->allow_extra_args(false)
      ->capture_default_str();
  app.add_option("-n,--n-gen", o.gen_sizes, "tokens of the decode tests (0: none)")->delimiter(',')->allow_extra_args(false)->capture_default_str();
  app.add_option("-d,--n-depth", o.depths, "tokens in the KV cache before each test")->delimiter(',')->allow_extra_args(false)->capture_default_str();
  app.add_option("-r,--repetitions", o.repetitions, "timed runs of each test")->capture_default_str();
  app.add_option("--engine", o.engine, "vulkan, cpu (the f32 reference) or cpu-f64")
      ->check(CLI::IsMember(gptoss::runtime::engine_kind_names()))
      ->capture_default_str();
  app.add_option("--device", o.device, "Vulkan device index (gptoss-run --list-devices lists them)");
  gptoss::add_vulkan_options(app, o.vulkan);
  gptoss::add_prefill_chunk_option(app, o.prefill_chunk);
  app.add_option("--kv-cache", o.kv_caches,
                 "the KV cache's types, keys and values alike: f32, f16 or both (f32,f16; llama.cpp's -ctk/-ctv)")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->check(CLI::IsMember(gptoss::runtime::kv_cache_type_names()))
      ->capture_default_str();
  app.add_option("--variant", o.variants, "NAME:KEYS, a Vulkan variant to run too (repeatable; see above)");
  app.add_option("-o,--output", o.output, "format on stdout: md, json or csv")
      ->check(CLI::IsMember(output_format_names()))
      ->capture_default_str();
  app.add_option("--save", o.saves, "also write the results to FILE, in the format its name ends in (.md, .json, .csv)");
  app.add_flag("--no-warmup", o.no_warmup, "no untimed run before each test's timed runs");
  app.add_option("--warmup-seconds", o.warmup_seconds,
                 "the untimed runs before each test repeat until this much time has passed (at least one run): a GPU's "
                 "clock, low after the model's load, comes back up")
      ->check(CLI::Range(0.0, 60.0))
      ->capture_default_str();
  app.add_flag("--greedy", o.greedy, "decode steps return the argmax instead of the logits (Engine::forward_greedy)");
  app.add_flag("-q,--quiet", o.quiet, "no progress on stderr");
  CLI11_PARSE(app, argc, argv);

  std::optional<Outputs> outputs;
  return gptoss::report_errors("gptoss-bench", [&] {
    try {
      const auto tests = plan_tests(o.prompt_sizes, o.gen_sizes, o.depths);
      check_options(app, o, tests);
      outputs.emplace(*output_format_from_name(o.output), save_files(o));
      const auto variants = variants_of(o);
      for (const auto& path : o.models)
        for (const auto& kv_cache : o.kv_caches)
          for (const auto& variant : variants) bench_model(o, path, kv_cache, variant, tests, *outputs);
      outputs->finish();
      return 0;
    } catch (const std::exception&) {
      // What finished is still written; a failure to write it is reported before the first error.
      try {
        if (outputs) outputs->finish();
      } catch (const std::exception& save_error) {
        std::cerr << "gptoss-bench: " << save_error.what() << "\n";
      }
      throw;
    }
  });
}

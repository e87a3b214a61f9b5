#pragma once
// gptoss-bench's results and their three outputs, in llama-bench's shapes so the two tools' results
// sit side by side:
//   md:   a table (model, size, params, backend, device, dev mem, test, t/s as mean ± stddev);
//   json: an array of objects with llama-bench's field names where it has the field (model_size,
//         model_n_params, n_prompt, n_gen, n_depth, avg_ts, stddev_ts, samples_ns, samples_ts, ...)
//         and the engine, device and device memory besides;
//   csv:  a header and one row per result: the scalar fields of the JSON object, every value quoted.
// result_json is the one list of fields; the CSV columns are derived from it.
// Every format is printed as it goes (header, a row per finished test, footer), so a long run
// shows its results early and a run stopped by an error still ends in a parseable document.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/gptoss-bench/bench_tests.h"
#include "tools/gptoss-bench/model_summary.h"

namespace gptoss::bench {

struct BenchResult {
  std::string model_filename;  // as given: a path or a spec such as synth:120b
  std::string model_format;    // safetensors, GGUF, model.bin, synthesized
  ModelSummary model;
  std::string engine;          // cpu, cpu-f64, vulkan
  std::string backend;         // llama-bench's column: CPU or Vulkan
  std::string device;          // Engine::device_description(): the GPU's name and driver, or "CPU (f32)"
  std::string cpu_info;
  uint64_t device_memory_bytes = 0;  // held by the engine after the test (0 on the CPU engines)
  std::string kv_cache = "f32";      // the KV cache's type (runtime::kv_cache_type_name): keys and values alike
  uint32_t n_ubatch = 0;             // tokens per prefill submit (EngineOptions::prefill_chunk); 0: one pass (CPU engines)
  std::string variant;               // the --variant's name, empty for the engine as the options set it
  std::string tuning;                // the Vulkan tuning that differs from the defaults (tuning_text), or empty
  double load_seconds = 0;           // making the engine: decoding or uploading the weights
  BenchTest test;
  std::string decode_output;  // logits or argmax (decode_output_name)
  bool warmup = true;
  double warmup_seconds = 0;  // the least time the warm-up runs took (RunOptions::warmup_seconds)
  std::string test_time;  // UTC, ISO 8601, when the test started
  std::vector<uint64_t> samples_ns;
};

struct MeanStddev {
  double mean = 0, stddev = 0;  // the sample standard deviation (n - 1), 0 for one sample
};
MeanStddev mean_stddev(const std::vector<double>& values);
// Tokens per second of each run: test tokens / the run's seconds.
std::vector<double> samples_tokens_per_second(const BenchResult& result);

nlohmann::ordered_json result_json(const BenchResult& result);

enum class OutputFormat { Markdown, Json, Csv };
std::optional<OutputFormat> output_format_from_name(std::string_view name);  // md, json, csv
std::optional<OutputFormat> output_format_for_file(const std::string& path);  // by extension
const std::vector<std::string>& output_format_names();

std::string render_header(OutputFormat format);
// `first`: no result was rendered before this one (JSON separates objects by commas).
std::string render_row(OutputFormat format, const BenchResult& result, bool first);
std::string render_footer(OutputFormat format);
std::string render_all(OutputFormat format, const std::vector<BenchResult>& results);

// The processor's model name from /proc/cpuinfo (llama-bench's cpu_info); empty where unknown.
std::string cpu_model_name();
// Now, UTC, as 2026-11-24T10:11:12Z.
std::string utc_now_iso8601();

}  // namespace gptoss::bench

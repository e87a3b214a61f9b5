// gptoss-bench's numbers and formats without an engine: parameter and size counts, statistics,
// and the markdown, JSON and CSV renderings of hand-made results.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "convert/model_io.h"
#include "tests/test_support.h"
#include "tools/gptoss-bench/bench_report.h"
#include "tools/gptoss-bench/model_summary.h"

namespace gptoss::bench {
namespace {

// gpt-oss parameters from the config alone: embedding and unembedding, and per layer two norms,
// Q/K/V/O with biases, sinks, the router, and the experts' two projections with biases.
uint64_t parameters_from_config(const GptOssConfig& c) {
  const uint64_t h = c.hidden_size, q = uint64_t{c.num_heads} * c.head_dim, kv = uint64_t{c.num_kv_heads} * c.head_dim;
  const uint64_t e = c.num_experts, i = c.intermediate_size;
  const uint64_t layer = 2 * h + (h * q + q) + 2 * (h * kv + kv) + (q * h + h) + c.num_heads + (e * h + e) +
                         (e * 2 * i * h + e * 2 * i) + (e * h * i + e * h);
  return 2 * uint64_t{c.vocab_size} * h + h + c.num_layers * layer;
}

TEST(ModelSummary, CountsAsLlamaBenchCountsAGguf) {
  const auto a = summarize_model(load_model("synth:a"));
  EXPECT_EQ(a.parameters, parameters_from_config(load_model("synth:a").config));
  EXPECT_EQ(a.parameters, 26736544u);
  // Size: BF16 for every non-expert element, MXFP4 at 17 bytes per 32 values.
  const auto model = load_model("synth:a");
  const uint64_t expert_values = 4ull * 8 * (2 * 64 * 64 + 64 * 64);  // 4 layers, 8 experts, mlp1 + mlp2
  EXPECT_EQ(a.size_bytes, 2 * (a.parameters - expert_values) + expert_values / 32 * 17);
  EXPECT_EQ(a.dense_encoding, "BF16");
  EXPECT_EQ(a.type, "gpt-oss 27M BF16 + MXFP4");
  // llama-bench prints 20.91 B and 116.83 B for gpt-oss-20b and -120b.
  const auto b20 = summarize_model(load_model("synth:20b"));
  EXPECT_EQ(b20.parameters, 20914757184u);
  EXPECT_EQ(b20.type, "gpt-oss 21B BF16 + MXFP4");
  EXPECT_EQ(summarize_model(load_model("synth:120b")).parameters, 116829156672u);
}

TEST(ModelSummary, Q8_0DenseCountsTheSameParameters) {
  GOLDENS_OR_SKIP();
  const auto q8 = summarize_model(load_model(*goldens / "a" / "model-q8_0.gguf"));
  EXPECT_EQ(q8.parameters, 26736544u);
  EXPECT_EQ(q8.dense_encoding, "Q8_0+F32");  // the router stays F32, as llama.cpp's converter keeps it
  EXPECT_EQ(q8.type, "gpt-oss 27M Q8_0 + MXFP4");
  EXPECT_LT(q8.size_bytes, summarize_model(load_model("synth:a")).size_bytes);
}

TEST(BenchStats, MeanAndSampleStandardDeviation) {
  const auto s = mean_stddev({1, 2, 3, 4});
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_NEAR(s.stddev, std::sqrt(5.0 / 3.0), 1e-12);
  EXPECT_EQ(mean_stddev({7}).stddev, 0.0);
  EXPECT_EQ(mean_stddev({}).mean, 0.0);
}

BenchResult sample_result() {
  BenchResult r;
  r.model_filename = "models/a \"quoted\", file.gguf";
  r.model_format = "GGUF";
  r.model.size_bytes = 3ull << 30;
  r.model.parameters = 20914757184u;
  r.model.dense_encoding = "Q8_0";
  r.model.type = "gpt-oss 21B Q8_0 + MXFP4";
  r.engine = "vulkan";
  r.backend = "Vulkan";
  r.device = "NVIDIA H100 (NVIDIA 580.1)";
  r.device_memory_bytes = 1ull << 30;
  r.kv_cache = "f16";
  r.n_ubatch = 2048;
  r.variant = "portable";
  r.tuning = "coopmat=off";
  r.test = {TestKind::Prefill, 100, 7};
  r.decode_output = "logits";
  r.test_time = "2026-11-24T00:00:00Z";
  r.samples_ns = {1000000000, 2000000000};
  return r;
}

TEST(BenchReport, JsonHasLlamaBenchFieldsAndEverySample) {
  const auto j = result_json(sample_result());
  EXPECT_EQ(j["test"], "pp100 @ d7");
  EXPECT_EQ(j["n_prompt"], 100);
  EXPECT_EQ(j["n_gen"], 0);
  EXPECT_EQ(j["n_depth"], 7);
  EXPECT_EQ(j["repetitions"], 2);
  EXPECT_EQ(j["samples_ns"], (std::vector<uint64_t>{1000000000, 2000000000}));
  EXPECT_EQ(j["samples_ts"], (std::vector<double>{100.0, 50.0}));
  EXPECT_DOUBLE_EQ(j["avg_ts"].get<double>(), 75.0);
  EXPECT_NEAR(j["stddev_ts"].get<double>(), std::sqrt(2.0) * 25.0, 1e-9);
  EXPECT_EQ(j["avg_ns"], 1500000000u);
  EXPECT_EQ(j["model_n_params"], 20914757184u);
  EXPECT_EQ(j["model_size"], 3ull << 30);
  EXPECT_EQ(j["device_memory_bytes"], 1ull << 30);
  EXPECT_EQ(j["backends"], "Vulkan");
  EXPECT_EQ(j["engine"], "vulkan");
  EXPECT_EQ(j["type_k"], "f16");
  EXPECT_EQ(j["type_v"], "f16");
  EXPECT_EQ(j["n_ubatch"], 2048);
  EXPECT_EQ(j["variant"], "portable");
  EXPECT_EQ(j["tuning"], "coopmat=off");
  // A whole document, streamed or not, is one array.
  const auto all = nlohmann::json::parse(render_all(OutputFormat::Json, {sample_result(), sample_result()}));
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[1]["model_filename"], "models/a \"quoted\", file.gguf");
  EXPECT_TRUE(nlohmann::json::parse(render_all(OutputFormat::Json, {})).empty());
}

// RFC 4180 fields: quoted, quotes doubled.
std::vector<std::string> parse_csv_line(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted && ch == '"' && i + 1 < line.size() && line[i + 1] == '"') field += '"', ++i;
    else if (ch == '"') quoted = !quoted;
    else if (ch == ',' && !quoted) fields.push_back(field), field.clear();
    else field += ch;
  }
  fields.push_back(field);
  return fields;
}

TEST(BenchReport, CsvHeaderNamesTheScalarFieldsOfEveryRow) {
  const std::string csv = render_all(OutputFormat::Csv, {sample_result()});
  std::istringstream in(csv);
  std::string header_line, row_line, extra;
  std::getline(in, header_line);
  std::getline(in, row_line);
  EXPECT_FALSE(std::getline(in, extra));
  const auto header = parse_csv_line(header_line), row = parse_csv_line(row_line);
  ASSERT_EQ(header.size(), row.size());
  std::vector<std::string> scalar_keys;
  const auto object = result_json(sample_result());
  for (const auto& [key, value] : object.items())
    if (!value.is_array()) scalar_keys.push_back(key);
  EXPECT_EQ(header, scalar_keys);
  auto column = [&](const std::string& name) {
    return row[static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin())];
  };
  EXPECT_EQ(column("model_filename"), "models/a \"quoted\", file.gguf");
  EXPECT_EQ(column("test"), "pp100 @ d7");
  EXPECT_EQ(column("avg_ts"), "75.0");
  EXPECT_EQ(column("n_depth"), "7");
}

TEST(BenchReport, MarkdownTableAsLlamaBench) {
  const std::string md = render_all(OutputFormat::Markdown, {sample_result()});
  std::istringstream in(md);
  std::string header, rule, row;
  std::getline(in, header);
  std::getline(in, rule);
  std::getline(in, row);
  for (const char* title :
       {"| model ", " size |", " params |", "| backend ", "| device ", " dev mem |", "| kv ", "| variant ", " test |", " t/s |"})
    EXPECT_NE(header.find(title), std::string::npos) << title << " in " << header;
  EXPECT_EQ(std::count(rule.begin(), rule.end(), '|'), 11);
  EXPECT_NE(rule.find("-:"), std::string::npos);  // numbers right-aligned
  for (const char* cell : {"| gpt-oss 21B Q8_0 + MXFP4 ", " 3.00 GiB |", " 20.91 B |", "| Vulkan ", " 1.00 GiB |", "| f16 |",
                           "| portable ", " pp100 @ d7 |", " 75.00 ± 35.36 |"})
    EXPECT_NE(row.find(cell), std::string::npos) << cell << " in " << row;
  // Cells are padded to the header's widths (in characters: "±" is one).
  auto characters = [](const std::string& s) { return std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }); };
  EXPECT_EQ(characters(row), characters(header));
  EXPECT_EQ(row.find(" pp100 @ d7 |") + 11, header.find(" test |") + 5);
}

TEST(BenchReport, FormatsByNameAndFileExtension) {
  EXPECT_EQ(output_format_from_name("csv"), OutputFormat::Csv);
  EXPECT_EQ(output_format_from_name("sql"), std::nullopt);
  EXPECT_EQ(output_format_for_file("out/hf.json"), OutputFormat::Json);
  EXPECT_EQ(output_format_for_file("out/hf.md"), OutputFormat::Markdown);
  EXPECT_EQ(output_format_for_file("out/hf"), std::nullopt);
  EXPECT_EQ(output_format_names(), (std::vector<std::string>{"md", "json", "csv"}));
}

}  // namespace
}  // namespace gptoss::bench

#include "tools/gptoss-bench/bench_report.h"

#include "formats/core/name_table.h"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>

namespace gptoss::bench {

MeanStddev mean_stddev(const std::vector<double>& values) {
  MeanStddev s;
  if (values.empty()) return s;
  for (double v : values) s.mean += v;
  s.mean /= static_cast<double>(values.size());
  if (values.size() < 2) return s;
  double squares = 0;
  for (double v : values) squares += (v - s.mean) * (v - s.mean);
  s.stddev = std::sqrt(squares / static_cast<double>(values.size() - 1));
  return s;
}

std::vector<double> samples_tokens_per_second(const BenchResult& r) {
  std::vector<double> rates;
  for (uint64_t ns : r.samples_ns)
    rates.push_back(static_cast<double>(r.test.tokens) * 1e9 / static_cast<double>(std::max<uint64_t>(ns, 1)));
  return rates;
}

nlohmann::ordered_json result_json(const BenchResult& r) {
  std::vector<double> ns(r.samples_ns.begin(), r.samples_ns.end());
  const auto time = mean_stddev(ns);
  const auto rates = samples_tokens_per_second(r);
  const auto rate = mean_stddev(rates);
  nlohmann::ordered_json j;
  j["model_filename"] = r.model_filename;
  j["model_type"] = r.model.type;
  j["model_format"] = r.model_format;
  j["dense_encoding"] = r.model.dense_encoding;
  j["model_size"] = r.model.size_bytes;
  j["model_n_params"] = r.model.parameters;
  j["backends"] = r.backend;
  j["engine"] = r.engine;
  j["device"] = r.device;
  j["cpu_info"] = r.cpu_info;
  j["device_memory_bytes"] = r.device_memory_bytes;
  j["type_k"] = r.kv_cache;  // llama-bench's names; one type for both here
  j["type_v"] = r.kv_cache;
  j["n_ubatch"] = r.n_ubatch;  // llama-bench's name for its micro-batch
  j["variant"] = r.variant;
  j["tuning"] = r.tuning;
  j["load_seconds"] = r.load_seconds;
  j["test"] = r.test.name();
  j["n_prompt"] = r.test.n_prompt();
  j["n_gen"] = r.test.n_gen();
  j["n_depth"] = r.test.depth;
  j["decode_output"] = r.decode_output;
  j["warmup"] = r.warmup;
  j["warmup_seconds"] = r.warmup_seconds;
  j["repetitions"] = r.samples_ns.size();
  j["test_time"] = r.test_time;
  j["avg_ns"] = static_cast<uint64_t>(std::llround(time.mean));
  j["stddev_ns"] = static_cast<uint64_t>(std::llround(time.stddev));
  j["avg_ts"] = rate.mean;
  j["stddev_ts"] = rate.stddev;
  j["samples_ns"] = r.samples_ns;
  j["samples_ts"] = rates;
  return j;
}

namespace {
using Format = std::pair<OutputFormat, const char*>;
constexpr NameTable kFormats{Format{OutputFormat::Markdown, "md"}, Format{OutputFormat::Json, "json"},
                             Format{OutputFormat::Csv, "csv"}};

// ---- markdown: llama-bench's table, plus the device and its memory ----

struct Column {
  const char* title;
  int width;  // llama-bench pads to a fixed width so rows line up as they stream
  bool numeric;
};
constexpr Column kColumns[] = {{"model", 30, false}, {"size", 10, true},    {"params", 10, true},
                               {"backend", 7, false}, {"device", 40, false}, {"dev mem", 10, true},
                               {"kv", 3, false},      {"variant", 10, false}, {"test", 15, true},
                               {"t/s", 20, true}};

std::string printf_string(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

// Characters, not bytes, so "±" pads like one column.
size_t display_width(const std::string& text) {
  size_t width = 0;
  for (unsigned char ch : text) width += (ch & 0xC0) != 0x80;
  return width;
}

std::string markdown_line(const std::vector<std::string>& cells) {
  std::string line = "|";
  for (size_t i = 0; i < cells.size(); ++i) {
    const auto& c = kColumns[i];
    const size_t width = static_cast<size_t>(c.width), used = display_width(cells[i]);
    const std::string pad(used < width ? width - used : 0, ' ');
    line += " " + (c.numeric ? pad + cells[i] : cells[i] + pad) + " |";
  }
  return line + "\n";
}

std::string markdown_row(const BenchResult& r) {
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  const auto rate = mean_stddev(samples_tokens_per_second(r));
  return markdown_line({r.model.type, printf_string("%.2f GiB", static_cast<double>(r.model.size_bytes) / kGiB),
                        printf_string("%.2f B", static_cast<double>(r.model.parameters) / 1e9), r.backend, r.device,
                        r.device_memory_bytes
                            ? printf_string("%.2f GiB", static_cast<double>(r.device_memory_bytes) / kGiB)
                            : "-",
                        r.kv_cache, r.variant.empty() ? "-" : r.variant, r.test.name(),
                        printf_string("%.2f", rate.mean) + " ± " + printf_string("%.2f", rate.stddev)});
}

std::string markdown_header() {
  std::vector<std::string> titles;
  std::string rule = "|";
  for (const auto& c : kColumns) {
    titles.emplace_back(c.title);
    const size_t width = static_cast<size_t>(c.width);
    rule += " " + (c.numeric ? std::string(width - 1, '-') + ":" : std::string(width, '-')) + " |";
  }
  return markdown_line(titles) + rule + "\n";
}

// ---- csv: RFC 4180, every value quoted as llama-bench does ----

std::string csv_quote(const std::string& value) {
  std::string quoted = "\"";
  for (char ch : value) quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return quoted + "\"";
}

std::string csv_line(const nlohmann::ordered_json& object, bool header) {
  std::string line;
  for (const auto& [key, value] : object.items()) {
    if (value.is_array()) continue;  // the samples: in JSON only
    const std::string text = header ? key : value.is_string() ? value.get<std::string>() : value.dump();
    line += (line.empty() ? "" : ",") + csv_quote(text);
  }
  return line + "\n";
}
}  // namespace

const std::vector<std::string>& output_format_names() {
  static const std::vector<std::string> names = kFormats.names();
  return names;
}

std::optional<OutputFormat> output_format_from_name(std::string_view name) { return kFormats.from_name(name); }

std::optional<OutputFormat> output_format_for_file(const std::string& path) {
  const std::string extension = std::filesystem::path(path).extension().string();
  if (extension.empty()) return std::nullopt;
  return output_format_from_name(std::string_view(extension).substr(1));
}

std::string render_header(OutputFormat format) {
  switch (format) {
    case OutputFormat::Markdown: return markdown_header();
    case OutputFormat::Json: return "[\n";
    case OutputFormat::Csv: return csv_line(result_json(BenchResult{}), true);  // the field names alone
  }
  return "";
}

std::string render_row(OutputFormat format, const BenchResult& result, bool first) {
  switch (format) {
    case OutputFormat::Markdown: return markdown_row(result);
    case OutputFormat::Json: {
      std::string object = result_json(result).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
      std::string indented = "  ";
      for (char ch : object) indented += ch == '\n' ? std::string("\n  ") : std::string(1, ch);
      return (first ? "" : ",\n") + indented;
    }
    case OutputFormat::Csv: return csv_line(result_json(result), false);
  }
  return "";
}

std::string render_footer(OutputFormat format) { return format == OutputFormat::Json ? "\n]\n" : ""; }

std::string render_all(OutputFormat format, const std::vector<BenchResult>& results) {
  std::string out = render_header(format);
  for (size_t i = 0; i < results.size(); ++i) out += render_row(format, results[i], i == 0);
  return out + render_footer(format);
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with("model name")) {
      const auto colon = line.find(':');
      const auto start = colon == std::string::npos ? colon : line.find_first_not_of(" \t", colon + 1);
      return start == std::string::npos ? "" : line.substr(start);
    }
  return "";
}

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

}  // namespace gptoss::bench

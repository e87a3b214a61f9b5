#include "runtime/parity/trace_file.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>

#include <nlohmann/json.hpp>

#include "formats/core/atomic_file.h"
#include "formats/core/error.h"
#include "formats/core/json_value.h"
#include "formats/core/mapped_file.h"
#include "formats/core/zstd_frames.h"

namespace gptoss::parity {
namespace {
constexpr const char* kMagicLine = "gptoss trace\n";
constexpr uint32_t kVersion = 1;
constexpr uint64_t kMaxHeaderBytes = 64u << 20;

std::vector<uint8_t> stage_bytes(const Stage& s) {
  std::vector<uint8_t> bytes(s.values.size() * 4);
  for (size_t i = 0; i < s.values.size(); ++i) {
    const uint32_t v = std::bit_cast<uint32_t>(s.values[i]);
    for (int b = 0; b < 4; ++b) bytes[4 * i + b] = static_cast<uint8_t>(v >> (8 * b));
  }
  return bytes;
}
}  // namespace

void write_trace_file(const std::filesystem::path& path, const TraceHeader& header, const Trace& trace, int level) {
  nlohmann::ordered_json j;
  j["format"] = "gptoss trace";
  j["version"] = kVersion;
  j["model"] = {{"digest", header.model_digest}, {"source", header.model_source}};
  j["engine"] = header.engine;
  j["device"] = header.device;
  j["label"] = trace.label;
  j["prompt_tokens"] = header.prompt_tokens;
  j["stages"] = nlohmann::ordered_json::array();
  for (const auto& s : trace.stages) {
    if (s.values.size() != s.rows * s.cols) throw std::invalid_argument("trace stage " + s.name + ": values are not rows x cols");
    j["stages"].push_back({{"name", s.name}, {"rows", s.rows}, {"cols", s.cols}, {"first_row", s.first_row}});
  }
  const std::string text = kMagicLine + j.dump() + "\n";
  AtomicFileWriter out(path);
  out.write(zstd_compress_frame({reinterpret_cast<const uint8_t*>(text.data()), text.size()}, level));
  for (const auto& s : trace.stages) out.write(zstd_compress_frame(stage_bytes(s), level));
  out.commit();
}

TraceFile read_trace_file(const std::filesystem::path& path) {
  const std::string name = path.string();
  ZstdFrameReader frames(MappedFile::open(path));
  const auto header_frame = frames.next("header", kMaxHeaderBytes);
  const auto bytes = frames.decompress(header_frame, "header");
  const std::string text(bytes.begin(), bytes.end());
  const std::string magic = kMagicLine;
  if (text.compare(0, magic.size(), magic) != 0)
    throw_format_error(name, "header", 0, "not a gptoss trace (its first line is not \"gptoss trace\")");
  TraceFile file;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.substr(magic.size()));
  } catch (const nlohmann::json::exception& e) {
    throw_format_error(name, "header", 0, std::string("unreadable JSON: ") + e.what());
  }
  // Every field through JsonValue: a wrong type names the field ("header.stages[2].rows").
  const JsonValue h(j, name, 0, "header");
  const JsonValue version = h.at("version");
  if (version.as_u32() != kVersion) version.fail("version " + version.raw().dump() + "; this build reads 1");
  const JsonValue model = h.at("model");
  file.header.model_digest = model.get<std::string>("digest");
  file.header.model_source = model.get<std::string>("source");
  file.header.engine = h.get<std::string>("engine");
  file.header.device = h.get<std::string>("device");
  for (const auto& id : h.at("prompt_tokens").elements()) file.header.prompt_tokens.push_back(id.as_u32());
  file.trace.label = h.get<std::string>("label");
  for (const auto& s : h.at("stages").elements()) {
    Stage stage;
    stage.name = s.get<std::string>("name");
    stage.rows = s.at("rows").as_uint(SIZE_MAX);
    stage.cols = s.at("cols").as_uint(SIZE_MAX);
    stage.first_row = s.at("first_row").as_uint(UINT64_MAX);
    file.trace.stages.push_back(std::move(stage));
  }
  for (auto& stage : file.trace.stages) {
    const std::string field = "stage \"" + stage.name + "\"";
    if (stage.cols != 0 && stage.rows > (uint64_t{1} << 40) / stage.cols)
      throw_format_error(name, field, frames.offset(), "rows x cols is implausibly large");
    const uint64_t values = uint64_t{stage.rows} * stage.cols;
    const auto frame = frames.next(field, values * 4);
    std::vector<uint8_t> raw(values * 4);
    frames.decompress(frame, raw, field);
    stage.values.resize(values);
    for (uint64_t i = 0; i < values; ++i) {
      uint32_t v = 0;
      for (int b = 0; b < 4; ++b) v |= uint32_t{raw[4 * i + b]} << (8 * b);
      stage.values[i] = std::bit_cast<float>(v);
    }
  }
  if (!frames.at_end())
    throw_format_error(name, "after the last stage", frames.offset(), "bytes follow the stages the header lists");
  return file;
}

TraceComparison compare_traces(const TraceFile& a, const TraceFile& b, double tolerance) {
  if (a.header.prompt_tokens != b.header.prompt_tokens)
    throw std::invalid_argument("the traces ran different prompts (" + std::to_string(a.header.prompt_tokens.size()) +
                                " and " + std::to_string(b.header.prompt_tokens.size()) +
                                " tokens, or different ids): their stages are not comparable");
  TraceComparison c;
  c.tolerance = tolerance;
  for (const auto& sa : a.trace.stages) {
    StageDifference d;
    d.stage = sa.name;
    const Stage* sb = b.trace.find(sa.name);
    d.routing = is_router_stage(sa);
    if (sb && d.routing) {
      const auto rerouted = routing_differences(sa, *sb);
      d.rows = std::min(sa.first_row + sa.rows, sb->first_row + sb->rows) - std::max(sa.first_row, sb->first_row);
      d.cols = std::min(sa.cols, sb->cols);
      d.in_both = d.rows > 0;
      d.rerouted = rerouted.size();
      if (!rerouted.empty()) d.worst_row = rerouted.front().position;
    } else if (sb) {
      const uint64_t first = std::max(sa.first_row, sb->first_row);
      const uint64_t end = std::min(sa.first_row + sa.rows, sb->first_row + sb->rows);
      d.cols = std::min(sa.cols, sb->cols);
      d.rows = end > first ? end - first : 0;
      d.in_both = d.rows > 0 && d.cols > 0;
      bool nan = false;
      for (uint64_t r = first; r < end; ++r)
        for (size_t col = 0; col < d.cols; ++col) {
          const double va = sa.values[(r - sa.first_row) * sa.cols + col];
          const double vb = sb->values[(r - sb->first_row) * sb->cols + col];
          const double diff = va == vb ? 0.0 : std::fabs(va - vb);  // equal infinities agree
          if (std::isnan(diff)) nan = true;
          d.largest = std::max(d.largest, std::fabs(va));
          if (diff > d.max_abs_diff) {
            d.max_abs_diff = diff;
            d.worst_row = r;
            d.worst_col = col;
          }
        }
      if (nan) d.max_abs_diff = NAN;
      d.relative = d.largest > 0 ? d.max_abs_diff / d.largest : (d.max_abs_diff == 0 ? 0.0 : INFINITY);
    }
    d.parts = !d.in_both || std::isnan(d.relative) || d.relative > tolerance || d.rerouted > 0;
    if (d.parts && !c.first_parting) c.first_parting = c.stages.size();
    c.stages.push_back(std::move(d));
  }
  return c;
}

std::string trace_comparison_table(const TraceFile& a, const TraceFile& b, const TraceComparison& c) {
  std::ostringstream out;
  auto describe = [&](const char* which, const TraceFile& t) {
    out << which << ": " << t.trace.label << " (engine " << t.header.engine << ", " << t.header.device << "; model digest "
        << t.header.model_digest.substr(0, 16) << ")\n";
  };
  describe("A", a);
  describe("B", b);
  out << a.header.prompt_tokens.size() << " prompt tokens; tolerance " << c.tolerance
      << " of the stage's largest |value| in A\n\n";
  out << "| stage | rows x cols | largest abs(A) | max abs(A-B) | relative | at (position, column) | |\n|---|---|---|---|---|---|---|\n";
  for (const auto& d : c.stages) {
    char line[256];
    if (!d.in_both)
      std::snprintf(line, sizeof line, "| %s | - | - | - | - | - | only in A |\n", d.stage.c_str());
    else if (d.routing)
      std::snprintf(line, sizeof line, "| %s | %zu x %zu | routing | %llu rerouted | - | %s | %s |\n", d.stage.c_str(),
                    d.rows, d.cols, static_cast<unsigned long long>(d.rerouted),
                    d.rerouted ? std::to_string(d.worst_row).c_str() : "-", d.parts ? "PARTS" : "ok");
    else
      std::snprintf(line, sizeof line, "| %s | %zu x %zu | %.3e | %.3e | %.3e | %llu, %zu | %s |\n", d.stage.c_str(), d.rows,
                    d.cols, d.largest, d.max_abs_diff, d.relative, static_cast<unsigned long long>(d.worst_row), d.worst_col,
                    d.parts ? "PARTS" : "ok");
    out << line;
  }
  for (const auto& sb : b.trace.stages)
    if (!a.trace.find(sb.name)) out << "| " << sb.name << " | - | - | - | - | - | only in B |\n";
  out << "\n";
  if (c.first_parting)
    out << "first stage beyond the tolerance: " << c.stages[*c.first_parting].stage << "\n";
  else
    out << "every stage within the tolerance\n";
  return out.str();
}

nlohmann::ordered_json trace_comparison_json(const TraceFile& a, const TraceFile& b, const TraceComparison& c) {
  auto side = [](const TraceFile& t) -> nlohmann::ordered_json {
    return {{"label", t.trace.label}, {"engine", t.header.engine}, {"device", t.header.device},
            {"model_digest", t.header.model_digest}};
  };
  nlohmann::ordered_json j;
  j["a"] = side(a);
  j["b"] = side(b);
  j["tolerance"] = c.tolerance;
  j["stages"] = nlohmann::ordered_json::array();
  for (const auto& d : c.stages)
    j["stages"].push_back({{"stage", d.stage}, {"in_both", d.in_both}, {"rows", d.rows}, {"cols", d.cols},
                           {"largest", d.largest}, {"max_abs_diff", d.max_abs_diff}, {"relative", d.relative},
                           {"worst_position", d.worst_row}, {"worst_column", d.worst_col}, {"routing", d.routing},
                           {"rerouted", d.rerouted}, {"parts", d.parts}});
  j["first_parting"] = c.first_parting ? nlohmann::ordered_json(c.stages[*c.first_parting].stage) : nlohmann::ordered_json();
  return j;
}

}  // namespace gptoss::parity

#include "runtime/parity/activation_trace.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "formats/core/error.h"
#include "runtime/sampler/sampler.h"

namespace gptoss::parity {

const Stage* Trace::find(const std::string& name) const {
  for (const auto& s : stages)
    if (s.name == name) return &s;
  return nullptr;
}

runtime::ActivationObserver TraceRecorder::observer() {
  return [this](const runtime::ActivationView& v) {
    Stage s;
    s.name = runtime::stage_name(v.stage, v.layer);
    s.rows = v.rows;
    s.cols = v.cols;
    s.first_row = v.first_position;
    s.values.assign(v.values.begin(), v.values.end());
    trace_.stages.push_back(std::move(s));
  };
}

void TraceRecorder::add_logits(std::vector<float> values, size_t rows, size_t cols, uint64_t first_row) {
  trace_.stages.push_back(Stage{"logits", rows, cols, first_row, std::move(values)});
}

Trace trace_engine(runtime::Engine& engine, std::span<const uint32_t> tokens, std::string label) {
  TraceRecorder recorder(std::move(label));
  engine.reset();
  auto logits = engine.forward(tokens, runtime::LogitRows::All, recorder.observer());
  recorder.add_logits(std::move(logits), tokens.size(), engine.vocab_size(), 0);
  return recorder.take();
}

namespace {
Stage stage_from_refs(const SafetensorsFile& refs, const std::string& tensor, const std::string& name) {
  const auto* t = refs.find(tensor);
  if (!t) throw_format_error(refs.path(), tensor, std::nullopt, "missing from the references");
  if (t->dtype != DType::F32 || t->shape.empty() || t->shape.size() > 2)
    throw_format_error(refs.path(), tensor, std::nullopt, "expected a 1-D or 2-D F32 tensor");
  Stage s;
  s.name = name;
  s.rows = t->shape.size() == 2 ? t->shape[0] : 1;
  s.cols = t->shape.back();
  const auto bytes = refs.data(*t);
  s.values.resize(bytes.size() / 4);
  std::memcpy(s.values.data(), bytes.data(), bytes.size());
  return s;
}
}  // namespace

Trace trace_from_refs(const SafetensorsFile& refs, const std::string& prompt, std::vector<uint32_t>* ids) {
  Trace trace;
  trace.label = "transformers";
  const auto* id_tensor = refs.find(prompt + ".ids");
  if (!id_tensor || id_tensor->dtype != DType::I32)
    throw_format_error(refs.path(), prompt + ".ids", std::nullopt, "missing or not I32");
  const auto id_bytes = refs.data(*id_tensor);
  std::vector<uint32_t> tokens(id_bytes.size() / 4);
  std::memcpy(tokens.data(), id_bytes.data(), id_bytes.size());
  trace.stages.push_back(stage_from_refs(refs, prompt + ".embed", "embedding"));
  for (int l = 0; refs.find(prompt + ".layer" + std::to_string(l)); ++l)
    trace.stages.push_back(stage_from_refs(refs, prompt + ".layer" + std::to_string(l), "layer " + std::to_string(l)));
  trace.stages.push_back(stage_from_refs(refs, prompt + ".final_norm", "final norm"));
  Stage logits = stage_from_refs(refs, prompt + ".logits_last", "logits");
  logits.first_row = tokens.size() - 1;
  trace.stages.push_back(std::move(logits));
  if (ids) *ids = std::move(tokens);
  return trace;
}

double max_abs_difference(const Stage& a, const Stage& b) { return largest_difference(a, b).value; }

LargestDifference largest_difference(const Stage& a, const Stage& b) {
  const uint64_t first = std::max(a.first_row, b.first_row);
  const uint64_t end = std::min(a.first_row + a.rows, b.first_row + b.rows);
  const size_t cols = std::min(a.cols, b.cols);
  if (first >= end || cols == 0) return {NAN, first};
  LargestDifference worst{0, first};
  for (uint64_t r = first; r < end; ++r)
    for (size_t c = 0; c < cols; ++c) {
      const double d = std::fabs(static_cast<double>(a.values[(r - a.first_row) * a.cols + c]) -
                                 b.values[(r - b.first_row) * b.cols + c]);
      if (std::isnan(d)) return {NAN, r};
      if (d > worst.value) worst = {d, r};
    }
  return worst;
}

bool is_router_stage(const Stage& stage) { return stage.name.rfind("router ", 0) == 0; }

std::vector<RoutingDifference> routing_differences(const Stage& a, const Stage& b) {
  std::vector<RoutingDifference> out;
  const uint64_t first = std::max(a.first_row, b.first_row);
  const uint64_t end = std::min(a.first_row + a.rows, b.first_row + b.rows);
  for (uint64_t r = first; r < end; ++r) {
    auto experts = [r](const Stage& s) {
      std::vector<uint32_t> ids;
      for (size_t c = 0; c < s.cols; ++c) ids.push_back(static_cast<uint32_t>(s.values[(r - s.first_row) * s.cols + c]));
      return ids;
    };
    RoutingDifference d{r, experts(a), experts(b)};
    auto sa = d.a, sb = d.b;
    std::sort(sa.begin(), sa.end());
    std::sort(sb.begin(), sb.end());
    if (sa != sb) out.push_back(std::move(d));
  }
  return out;
}

double max_abs_value(const Stage& stage, const Stage& other) {
  const uint64_t first = std::max(stage.first_row, other.first_row);
  const uint64_t end = std::min(stage.first_row + stage.rows, other.first_row + other.rows);
  const size_t cols = std::min(stage.cols, other.cols);
  double largest = 0;
  for (uint64_t r = first; r < end; ++r)
    for (size_t c = 0; c < cols; ++c)
      largest = std::max(largest, std::fabs(static_cast<double>(stage.values[(r - stage.first_row) * stage.cols + c])));
  return largest;
}

namespace {
// A reference stage against another trace's stage of the same name, each measure computed once.
struct StageComparison {
  bool present = false;  // the other trace has the stage
  LargestDifference largest{NAN, 0};
  double relative = NAN;  // largest.value / the reference's largest |value| over what they share
};
StageComparison compare_stage(const Stage& stage, const Trace& other) {
  const Stage* s = other.find(stage.name);
  if (!s) return {};
  const LargestDifference d = largest_difference(stage, *s);
  const double largest = max_abs_value(stage, *s);
  return {true, d, largest > 0 ? d.value / largest : (d.value == 0 ? 0.0 : INFINITY)};
}
std::string scientific(double value) {
  char cell[32];
  std::snprintf(cell, sizeof cell, "%.2e", value);
  return cell;
}
}  // namespace

std::string parity_table(const Trace& reference, const std::vector<Trace>& others) {
  std::ostringstream out;
  out << "| stage (max abs diff vs " << reference.label << ") |";
  for (const auto& t : others) out << " " << t.label << " |";
  for (const auto& t : others) out << " " << t.label << " (relative) |";
  for (const auto& t : others) out << " " << t.label << " (at position) |";
  out << "\n|---|";
  for (size_t i = 0; i < 3 * others.size(); ++i) out << "---|";
  out << "\n";
  for (const auto& stage : reference.stages) {
    if (is_router_stage(stage)) {  // routing: tokens sent to other experts, the first one's position
      std::vector<std::string> counts, positions;
      for (const auto& t : others) {
        const Stage* s = t.find(stage.name);
        const auto d = s ? routing_differences(stage, *s) : std::vector<RoutingDifference>{};
        counts.push_back(!s ? "-" : d.empty() ? "same experts" : std::to_string(d.size()) + " rerouted");
        positions.push_back(d.empty() ? "-" : std::to_string(d.front().position));
      }
      out << "| " << stage.name << " |";
      for (const auto& c : counts) out << " " << c << " |";
      for (size_t i = 0; i < others.size(); ++i) out << " - |";
      for (const auto& p : positions) out << " " << p << " |";
      out << "\n";
      continue;
    }
    std::vector<StageComparison> row;
    for (const auto& t : others) row.push_back(compare_stage(stage, t));
    out << "| " << stage.name << " |";
    for (const auto& c : row) out << " " << (c.present ? scientific(c.largest.value) : "-") << " |";
    for (const auto& c : row) out << " " << (c.present ? scientific(c.relative) : "-") << " |";
    for (const auto& c : row) out << " " << (c.present ? std::to_string(c.largest.position) : "-") << " |";
    out << "\n";
  }
  // Each routing difference by name: a token routed to other experts moves every later stage at
  // its position by those experts' outputs, a discrete event rather than rounding.
  for (const auto& t : others) {
    std::string named;
    size_t total = 0;
    for (const auto& stage : reference.stages) {
      const Stage* s = is_router_stage(stage) ? t.find(stage.name) : nullptr;
      if (!s) continue;
      for (const auto& d : routing_differences(stage, *s)) {
        if (++total > 8) continue;
        auto ids = [](const std::vector<uint32_t>& v) {
          std::string text;
          for (uint32_t e : v) text += (text.empty() ? "" : ",") + std::to_string(e);
          return text;
        };
        named += (named.empty() ? "" : "; ") + stage.name.substr(7) + " at position " + std::to_string(d.position) +
                 " (experts " + ids(d.a) + " against " + ids(d.b) + ")";
      }
    }
    if (total > 0)
      out << "\nrouting: " << t.label << " sends " << total << " token" << (total == 1 ? "" : "s")
          << " to other experts than " << reference.label << ": layer " << named << (total > 8 ? "; ..." : "") << "\n";
  }
  return out.str();
}

Trace trace_decode_steps(runtime::Engine& engine, const Trace& prompt, size_t steps, std::vector<uint32_t>& tokens,
                         std::string label) {
  const Stage* last = prompt.find("logits");
  if (!last || last->rows == 0) throw std::invalid_argument(prompt.label + ": the prompt's trace has no logits");
  Trace trace;
  trace.label = std::move(label);
  std::span<const float> previous(last->values.data() + (last->rows - 1) * last->cols, last->cols);
  for (size_t i = 0; i < steps; ++i) {
    if (i == tokens.size()) tokens.push_back(sampling::argmax(previous));
    const uint64_t position = engine.position();
    const auto logits = engine.forward_last(std::span<const uint32_t>(&tokens[i], 1));
    trace.stages.push_back(Stage{"step " + std::to_string(i + 1), 1, logits.size(), position, {logits.begin(), logits.end()}});
    previous = trace.stages.back().values;
  }
  return trace;
}

namespace {
// The largest and second largest value of a row.
std::pair<float, float> top_two(std::span<const float> row) {
  float first = -INFINITY, second = -INFINITY;
  for (float v : row) {
    if (v > first) {
      second = first;
      first = v;
    } else if (v > second) {
      second = v;
    }
  }
  return {first, second};
}
}  // namespace

std::string decode_table(const Trace& reference, const std::vector<uint32_t>& tokens, const std::vector<Trace>& others) {
  std::ostringstream out;
  out << "| decode step (vs " << reference.label << ") | token fed | reference's top-2 margin |";
  for (const auto& t : others) out << " " << t.label << " (relative) |";
  for (const auto& t : others) out << " " << t.label << " argmax |";
  out << "\n|---|---|---|";
  for (size_t i = 0; i < 2 * others.size(); ++i) out << "---|";
  out << "\n";
  for (size_t i = 0; i < reference.stages.size(); ++i) {
    const Stage& stage = reference.stages[i];
    const auto [first, second] = top_two(stage.values);
    out << "| " << stage.name << " | " << (i < tokens.size() ? std::to_string(tokens[i]) : "-") << " | "
        << scientific(static_cast<double>(first - second)) << " |";
    for (const auto& t : others) {
      const StageComparison c = compare_stage(stage, t);
      out << " " << (c.present ? scientific(c.relative) : "-") << " |";
    }
    const uint32_t chosen = sampling::argmax(stage.values);
    for (const auto& t : others) {
      const Stage* s = t.find(stage.name);
      const uint32_t theirs = s ? sampling::argmax(s->values) : 0;
      out << " " << (!s ? "-" : theirs == chosen ? "same" : std::to_string(theirs)) << " |";
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace gptoss::parity

#pragma once
// What gptoss-eval reports: the text and its chunking, the reference's perplexity, one row per
// comparison against the reference (each candidate), the time spent, and where the reference's
// distributions came from or went. Two renderings, one JSON object and the text with its markdown
// table, both derived from one list of the rows' fields (report_fields): a field is added, renamed
// or reformatted there once, and the JSON schema and the table follow.
//
// A row's kind (RowKind, kRowKinds) names the JSON array it sits in and its place in the table, so
// another kind of comparison row is one more entry there, with no new rendering code.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/eval/chunk_plan.h"
#include "runtime/eval/evaluation.h"
#include "runtime/eval/statistics.h"

namespace gptoss::eval {

// The rows compared against the reference, in the order the JSON and the table list them: the
// engine's noise floor (the reference model on the candidates' engine, EvaluationRequest::floor)
// first, then the candidates.
enum class RowKind : uint8_t { NoiseFloor, Candidate };
struct RowKindInfo {
  RowKind kind;
  std::string_view json_array;  // the top-level JSON array holding the rows of this kind
};
inline constexpr RowKindInfo kRowKinds[] = {{RowKind::NoiseFloor, "noise_floor"}, {RowKind::Candidate, "candidates"}};

// A token position of the evaluated text: its chunk (from 0) and its position within the chunk.
struct TextPlace {
  uint64_t chunk = 0, position = 0;
};

// The model and engine a row is about.
struct RowSubject {
  std::string model;   // the path it was loaded from (JSON)
  std::string label;   // "GGUF model-q8_0.gguf" (the table)
  std::string engine;  // the engine's label, or "file PATH" for distributions read from a file
};

// One model on one engine. The comparison fields are those of a row compared against the reference.
struct ReportRow {
  RowKind kind = RowKind::Candidate;
  RowSubject subject;
  uint32_t vocab_size = 0;
  NllStats nll;
  uint32_t shared_rows = 0;   // rows compared: min(reference vocab, this vocab)
  bool renormalized = false;  // compared on shared rows only, both distributions renormalized over them
  ComparisonSummary comparison;
  // Where the next-token distributions differ the most (comparison.kl_max): where to look with
  // gptoss-run --parity.
  std::optional<TextPlace> kl_max_at;
  uint64_t chunks = 0;        // the chunks compared (the noise floor's may be fewer than the run's)
  // A candidate's mean KL within the noise floor's: the engines' difference, not the file's. None
  // without a floor (and for the floor's own row).
  std::optional<bool> within_floor;
};

ReportRow reference_row(RowSubject subject, const EvaluationResult& result);
ReportRow comparison_row(RowKind kind, RowSubject subject, const CandidateResult& candidate, uint32_t reference_vocab);

// How the table shows a field's value.
enum class CellFormat : uint8_t {
  Text,                // as is
  Fixed4,              // 12.3457
  Scientific3,         // 1.235e-04
  SignedScientific3,   // +1.235e-04
  Percent2,            // a fraction as 97.50%
};
// monostate: none (JSON null, "-"); a TextPlace is {"chunk", "position"} in the JSON, "chunk:position" in the table.
using FieldValue = std::variant<std::monostate, std::string, double, uint64_t, bool, TextPlace>;

struct ReportField {
  std::string_view json;    // JSON pointer inside the row's object ("/kl/mean"); empty: not in the JSON
  std::string_view column;  // the table's column title; empty: not in the table
  CellFormat format;
  bool comparison_only;     // only rows compared against the reference have it (not the reference's line)
  FieldValue (*value)(const ReportRow& row);
};
// Every field of a row, in JSON member order and table column order.
std::span<const ReportField> report_fields();

// The text evaluated: where it came from, its SHA-256 and size, and its ids before chunking.
struct EvaluatedText {
  std::string path, sha256;
  uint64_t bytes = 0, tokens = 0;
};

struct EvaluationReport {
  EvaluatedText text;
  ChunkPlan plan;
  ReportRow reference;
  std::vector<ReportRow> rows;  // compared against the reference, any kinds, in run order
  uint32_t chunks_per_forward = 1;  // how the engines ran the chunks (the same numbers at any)
  double seconds = 0, forward_seconds = 0, statistics_seconds = 0;
  std::optional<std::string> against_logits;  // the reference's distributions were read from this file
  struct SavedLogits {
    std::string path;
    uint64_t bytes = 0;
  };
  std::optional<SavedLogits> saved_logits;  // ... or written to this one

  double tokens_per_second() const;  // text tokens run through the models per second
};

// `models[0]` is the reference's subject, `models[k + 1]` that of result.candidates[k];
// `floor` that of result.floor (the reference model on the candidates' engine) where it was run.
EvaluationReport make_report(EvaluatedText text, const ChunkPlan& plan, const EvaluationResult& result,
                             std::span<const RowSubject> models, const std::optional<RowSubject>& floor = std::nullopt);

nlohmann::ordered_json report_json(const EvaluationReport& report);
// The text gptoss-eval prints: the text and chunking, the reference's perplexity, the table of
// comparison rows with its legend, and notes (renormalized vocabularies, the logits file).
std::string report_text(const EvaluationReport& report);
// The time taken, for stderr.
std::string report_timing(const EvaluationReport& report);

}  // namespace gptoss::eval

#include "runtime/eval/eval_report.h"

#include <stdexcept>
#include <type_traits>

#include "formats/core/string_printf.h"

namespace gptoss::eval {
namespace {

using Row = const ReportRow&;

// The one list of fields: JSON members in this order, table columns in this order. The format is
// the table's, for the fields it shows.
constexpr ReportField kFields[] = {
    {"", "candidate", CellFormat::Text, true, [](Row r) -> FieldValue { return r.subject.label; }},
    {"/model", "", CellFormat::Text, false, [](Row r) -> FieldValue { return r.subject.model; }},
    {"/engine", "engine", CellFormat::Text, false, [](Row r) -> FieldValue { return r.subject.engine; }},
    {"/vocab_size", "", CellFormat::Text, false, [](Row r) -> FieldValue { return uint64_t{r.vocab_size}; }},
    {"/shared_rows", "", CellFormat::Text, true, [](Row r) -> FieldValue { return uint64_t{r.shared_rows}; }},
    {"/renormalized", "", CellFormat::Text, true, [](Row r) -> FieldValue { return r.renormalized; }},
    {"/perplexity", "PPL", CellFormat::Fixed4, false, [](Row r) -> FieldValue { return r.nll.perplexity(); }},
    {"/perplexity_uncertainty", "", CellFormat::Text, false,
     [](Row r) -> FieldValue { return r.nll.perplexity_uncertainty(); }},
    {"/mean_nll", "", CellFormat::Text, false, [](Row r) -> FieldValue { return r.nll.mean(); }},
    {"/tokens", "", CellFormat::Text, false, [](Row r) -> FieldValue { return r.nll.count; }},
    {"/chunks", "", CellFormat::Text, true, [](Row r) -> FieldValue { return r.chunks; }},
    {"/kl/mean", "mean KL", CellFormat::Scientific3, true, [](Row r) -> FieldValue { return r.comparison.kl_mean; }},
    {"/kl/median", "median KL", CellFormat::Scientific3, true, [](Row r) -> FieldValue { return r.comparison.kl_median; }},
    {"/kl/p99", "p99 KL", CellFormat::Scientific3, true, [](Row r) -> FieldValue { return r.comparison.kl_p99; }},
    {"/kl/p99_9", "p99.9 KL", CellFormat::Scientific3, true, [](Row r) -> FieldValue { return r.comparison.kl_p999; }},
    {"/kl/max", "max KL", CellFormat::Scientific3, true, [](Row r) -> FieldValue { return r.comparison.kl_max; }},
    {"/kl/max_at", "max at", CellFormat::Text, true,
     [](Row r) -> FieldValue { return r.kl_max_at ? FieldValue(*r.kl_max_at) : FieldValue(std::monostate{}); }},
    {"/top1_agreement", "top-1 agree", CellFormat::Percent2, true,
     [](Row r) -> FieldValue { return r.comparison.top1_agreement; }},
    {"/dp_mean", "mean dp", CellFormat::SignedScientific3, true, [](Row r) -> FieldValue { return r.comparison.dp_mean; }},
    {"/dp_rms", "RMS dp", CellFormat::Scientific3, true, [](Row r) -> FieldValue { return r.comparison.dp_rms; }},
    {"/within_noise_floor", "", CellFormat::Text, true,
     [](Row r) -> FieldValue { return r.within_floor ? FieldValue(*r.within_floor) : FieldValue(std::monostate{}); }},
};

// The share of a row's KL sum from which its largest position is called out in the text: a spread
// difference over hundreds of positions puts a few percent at most in any one.
constexpr double kOnePositionShare = 0.1;

nlohmann::ordered_json json_value(const FieldValue& v) {
  return std::visit(
      [](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) return nlohmann::ordered_json(nullptr);
        else if constexpr (std::is_same_v<T, TextPlace>)
          return nlohmann::ordered_json{{"chunk", x.chunk}, {"position", x.position}};
        else return nlohmann::ordered_json(x);
      },
      v);
}

std::string cell(const ReportField& field, const ReportRow& row) {
  const FieldValue v = field.value(row);
  if (std::holds_alternative<std::monostate>(v)) return "-";
  if (const auto* text = std::get_if<std::string>(&v)) return *text;
  if (const auto* flag = std::get_if<bool>(&v)) return *flag ? "yes" : "no";
  if (const auto* place = std::get_if<TextPlace>(&v)) return std::to_string(place->chunk) + ":" + std::to_string(place->position);
  const auto* count = std::get_if<uint64_t>(&v);
  if (count && field.format == CellFormat::Text) return std::to_string(*count);
  const double x = count ? static_cast<double>(*count) : std::get<double>(v);
  switch (field.format) {
    case CellFormat::Text: return string_printf("%g", x);
    case CellFormat::Fixed4: return string_printf("%.4f", x);
    case CellFormat::Scientific3: return string_printf("%.3e", x);
    case CellFormat::SignedScientific3: return string_printf("%+.3e", x);
    case CellFormat::Percent2: return string_printf("%.2f%%", 100 * x);
  }
  return {};
}

nlohmann::ordered_json row_json(const ReportRow& row, bool compared) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& f : kFields)
    if (!f.json.empty() && (compared || !f.comparison_only))
      j[nlohmann::ordered_json::json_pointer(std::string(f.json))] = json_value(f.value(row));
  return j;
}

}  // namespace

std::span<const ReportField> report_fields() { return kFields; }

ReportRow reference_row(RowSubject subject, const EvaluationResult& result) {
  ReportRow row;
  row.subject = std::move(subject);
  row.vocab_size = result.reference_vocab;
  row.nll = result.reference;
  return row;
}

ReportRow comparison_row(RowKind kind, RowSubject subject, const CandidateResult& c, uint32_t reference_vocab) {
  ReportRow row;
  row.kind = kind;
  row.subject = std::move(subject);
  row.vocab_size = c.vocab_size;
  row.nll = c.nll;
  row.shared_rows = c.shared_rows;
  row.renormalized = c.shared_rows != c.vocab_size || c.shared_rows != reference_vocab;
  row.comparison = c.summary();
  return row;
}

double EvaluationReport::tokens_per_second() const { return static_cast<double>(plan.evaluated_tokens()) / seconds; }

EvaluationReport make_report(EvaluatedText text, const ChunkPlan& plan, const EvaluationResult& result,
                             std::span<const RowSubject> models, const std::optional<RowSubject>& floor) {
  if (models.size() != result.candidates.size() + 1)
    throw std::invalid_argument("make_report: " + std::to_string(models.size()) + " models for the reference and " +
                                std::to_string(result.candidates.size()) + " candidates");
  EvaluationReport report;
  report.text = std::move(text);
  report.plan = plan;
  report.chunks_per_forward = result.chunks_per_forward;
  if (floor.has_value() != result.floor.has_value())
    throw std::invalid_argument("make_report: a noise floor's subject without its result, or the reverse");
  report.reference = reference_row(models[0], result);
  const uint32_t scored = plan.scored_per_chunk();
  const auto chunks_of = [&](const CandidateResult& c) { return scored ? c.positions.size() / scored : 0; };
  // A row's positions are its chunks' scored ones in text order, from the text's first chunk.
  const auto place_of_max = [&](const ReportRow& row) -> std::optional<TextPlace> {
    if (!row.comparison.kl_max_index || scored == 0) return std::nullopt;
    const uint64_t i = *row.comparison.kl_max_index;
    return TextPlace{i / scored, plan.first_scored() + i % scored};
  };
  std::optional<double> floor_kl;
  if (floor) {
    report.rows.push_back(comparison_row(RowKind::NoiseFloor, *floor, *result.floor, result.reference_vocab));
    report.rows.back().chunks = chunks_of(*result.floor);
    report.rows.back().kl_max_at = place_of_max(report.rows.back());
    floor_kl = report.rows.back().comparison.kl_mean;
  }
  for (size_t k = 0; k < result.candidates.size(); ++k) {
    report.rows.push_back(comparison_row(RowKind::Candidate, models[k + 1], result.candidates[k], result.reference_vocab));
    report.rows.back().chunks = chunks_of(result.candidates[k]);
    report.rows.back().kl_max_at = place_of_max(report.rows.back());
    if (floor_kl) report.rows.back().within_floor = report.rows.back().comparison.kl_mean <= *floor_kl;
  }
  report.seconds = result.seconds;
  report.forward_seconds = result.forward_seconds;
  report.statistics_seconds = result.statistics_seconds;
  return report;
}

nlohmann::ordered_json report_json(const EvaluationReport& r) {
  const auto& plan = r.plan;
  nlohmann::ordered_json j;
  j["text"] = {{"path", r.text.path}, {"bytes", r.text.bytes}, {"sha256", r.text.sha256}, {"tokens", r.text.tokens}};
  j["chunking"] = {{"ctx", plan.ctx}, {"chunks", plan.chunks}, {"available_chunks", plan.available_chunks},
                   {"first_scored", plan.first_scored()}, {"scored_tokens", plan.scored_tokens()}, {"bos", false},
                   {"chunks_per_forward", r.chunks_per_forward}};
  j["reference"] = row_json(r.reference, false);
  for (const auto& kind : kRowKinds) {
    auto& rows = j[std::string(kind.json_array)] = nlohmann::ordered_json::array();
    for (const auto& row : r.rows)
      if (row.kind == kind.kind) rows.push_back(row_json(row, true));
  }
  j["seconds"] = r.seconds;
  j["forward_seconds"] = r.forward_seconds;
  j["statistics_seconds"] = r.statistics_seconds;
  j["tokens_per_second"] = r.tokens_per_second();
  if (r.saved_logits) j["saved_logits"] = {{"path", r.saved_logits->path}, {"bytes", r.saved_logits->bytes}};
  return j;
}

std::string report_text(const EvaluationReport& r) {
  const auto& plan = r.plan;
  std::string out;
  append_printf(out, "text: %s (%llu bytes, sha256 %.16s...), %llu tokens (no BOS)\n", r.text.path.c_str(),
                static_cast<unsigned long long>(r.text.bytes), r.text.sha256.c_str(),
                static_cast<unsigned long long>(r.text.tokens));
  append_printf(out, "chunks: %u of %u tokens (the text holds %u), each scored on positions %u..%u: %llu scored tokens; "
                "%u per forward\n",
                plan.chunks, plan.ctx, plan.available_chunks, plan.first_scored(), plan.ctx - 2,
                static_cast<unsigned long long>(plan.scored_tokens()), r.chunks_per_forward);
  append_printf(out, "reference: %s (%s): PPL = %.4f +/- %.4f\n", r.reference.subject.label.c_str(),
                r.reference.subject.engine.c_str(), r.reference.nll.perplexity(), r.reference.nll.perplexity_uncertainty());
  if (!r.rows.empty()) {
    std::string header = "|", rule = "|";
    for (const auto& f : kFields)
      if (!f.column.empty()) {
        header += " " + std::string(f.column) + " |";
        rule += "---|";
      }
    out += "\n" + header + "\n" + rule + "\n";
    for (const auto& kind : kRowKinds)
      for (const auto& row : r.rows) {
        if (row.kind != kind.kind) continue;
        out += "|";
        for (const auto& f : kFields)
          if (!f.column.empty()) out += " " + cell(f, row) + " |";
        out += "\n";
      }
    out += "\nKL = KL(reference || candidate) in nats per token; max at = chunk:position of the max KL; dp = "
           "P_candidate(t) - P_reference(t) for the reference's top token t.\n";
    for (const auto& row : r.rows) {
      if (row.kind == RowKind::NoiseFloor)
        append_printf(out,
                      "noise floor: the reference model on the candidates' engine (%s) against the reference, over %llu "
                      "chunk%s: what the engines alone differ by\n",
                      row.subject.engine.c_str(), static_cast<unsigned long long>(row.chunks), row.chunks == 1 ? "" : "s");
      if (row.within_floor.value_or(false))
        append_printf(out, "note: %s is within the engine's noise floor: its KL is the engines' difference, not its file's\n",
                      row.subject.label.c_str());
    }
    // A compared row whose largest KL is a large share of its KL's sum: one event (a router
    // near-tie, say) rather than a spread difference, and where to run the stages of it.
    for (const auto& row : r.rows) {
      const double sum = row.comparison.kl_mean * static_cast<double>(row.comparison.positions);
      if (!row.kl_max_at || !(sum > 0) || row.comparison.kl_max < kOnePositionShare * sum) continue;
      append_printf(out,
                    "note: %s: one position, %llu:%llu, holds %.0f%% of the KL's sum (KL %.3e there); "
                    "gptoss-run MODEL --text %s --ctx %u --chunk %llu --through %llu with --parity or --engines shows "
                    "the stages where it begins\n",
                    row.kind == RowKind::NoiseFloor ? "the noise floor" : row.subject.label.c_str(),
                    static_cast<unsigned long long>(row.kl_max_at->chunk),
                    static_cast<unsigned long long>(row.kl_max_at->position), 100 * row.comparison.kl_max / sum,
                    row.comparison.kl_max, r.text.path.c_str(), plan.ctx,
                    static_cast<unsigned long long>(row.kl_max_at->chunk),
                    static_cast<unsigned long long>(row.kl_max_at->position));
    }
    for (const auto& row : r.rows)
      if (row.renormalized)
        append_printf(out,
                      "note: %s has %u vocabulary rows, the reference %u: compared on rows 0..%u, both distributions "
                      "renormalized over them (its PPL is over its own %u rows)\n",
                      row.subject.label.c_str(), row.vocab_size, r.reference.vocab_size, row.shared_rows - 1,
                      row.vocab_size);
  }
  if (r.against_logits)
    append_printf(out,
                  "note: the reference's distributions come from %s (f16 log-probabilities: KL to ~1e-6, see "
                  "docs/eval.md)\n",
                  r.against_logits->c_str());
  if (r.saved_logits)
    append_printf(out, "saved the reference's distributions to %s (%.1f MB, %.1f KB per scored token)\n",
                  r.saved_logits->path.c_str(), static_cast<double>(r.saved_logits->bytes) / 1e6,
                  static_cast<double>(r.saved_logits->bytes) / 1e3 / static_cast<double>(plan.scored_tokens()));
  return out;
}

std::string report_timing(const EvaluationReport& r) {
  return string_printf("%llu tokens in %.2f s: %.1f tokens/s (forwards %.2f s, statistics %.2f s)\n",
                       static_cast<unsigned long long>(r.plan.evaluated_tokens()), r.seconds, r.tokens_per_second(),
                       r.forward_seconds, r.statistics_seconds);
}

}  // namespace gptoss::eval

#include "verify/equivalence.h"

#include <charconv>
#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include "convert/gguf/gguf_sources.h"
#include "verify/canonical_digest.h"
#include "verify/declared_loss.h"

namespace gptoss {

std::string verdict_name(Verdict v) {
  switch (v) {
    case Verdict::Identical: return "identical";
    case Verdict::IdenticalAfterTransform: return "identical after layout transform";
    case Verdict::LossyAsDeclared: return "lossy as declared";
    case Verdict::Different: return "different";
    case Verdict::Missing: return "missing";
  }
  return "?";
}

bool ModelComparison::any_different() const {
  if (!config_differences.empty() || !tokenizer_differences.empty()) return true;
  for (const auto& t : tensors)
    if (t.verdict == Verdict::Different || t.verdict == Verdict::Missing) return true;
  return false;
}

namespace {
// Values as a person reads them: the shortest decimal that reads back as the double, "none" for
// an absent token id.
std::string config_value_text(double v) {
  char text[32];
  const auto [end, ec] = std::to_chars(text, text + sizeof text, v);
  return ec == std::errc() ? std::string(text, end) : std::to_string(v);
}
std::string config_value_text(uint64_t v) { return std::to_string(v); }
std::string config_value_text(uint32_t v) { return std::to_string(v); }
std::string config_value_text(bool v) { return v ? "true" : "false"; }
std::string config_value_text(const std::optional<uint32_t>& v) { return v ? std::to_string(*v) : "none"; }
// Layer lists are long (36 layers): say where they first differ instead of printing both.
std::string config_difference_text(const std::vector<bool>& a, const std::vector<bool>& b) {
  if (a.size() != b.size()) return std::to_string(a.size()) + " layers vs " + std::to_string(b.size());
  for (size_t l = 0; l < a.size(); ++l)
    if (a[l] != b[l])
      return "layer " + std::to_string(l) + " is " + (a[l] ? "sliding" : "full") + " vs " + (b[l] ? "sliding" : "full");
  return "equal";
}
template <typename T>
std::string config_difference_text(const T& a, const T& b) {
  return config_value_text(a) + " vs " + config_value_text(b);
}

// The expert matrix (the *Blocks tensor) of the experts `t` belongs to.
const CanonicalTensor& expert_matrix_of(const CanonicalModel& model, const CanonicalTensor& t) {
  return model.get(expert_matrix_role(t.spec.role), t.spec.layer);
}

// Whether the experts `t` belongs to are the MXFP4 pair on one side and a matrix in another type
// on the other (a GGUF's Q8_0 experts and the safetensors the converter requantized them into).
bool expert_forms_differ(const CanonicalModel& a, const CanonicalModel& b, const CanonicalTensor& t) {
  return is_mxfp4_role(t.spec.role) && holds_mxfp4(expert_matrix_of(a, t)) != holds_mxfp4(expert_matrix_of(b, t));
}

// An expert matrix as values: the pair read as ggml MXFP4 rows of the matrix's shape [E, rows, in]
// (a lossless repack), the other form as it is.
CanonicalTensor expert_values(const CanonicalModel& model, const CanonicalTensor& matrix) {
  if (!holds_mxfp4(matrix)) return matrix;
  const auto& scales = model.get(expert_scales_role(matrix.spec.role), matrix.spec.layer);
  TensorSpec spec = matrix.spec;
  spec.shape = canonical_shape(model.config, spec.role, DType::MXFP4);
  return {spec, DType::MXFP4, make_ggml_mxfp4_rows(matrix.source, scales.source, spec.shape.back() / kMxfp4BlockElements, 1, 0),
          matrix.origin};
}

bool within_f32_rounding(double x, double y) { return std::fabs(x - y) <= 1e-6 * std::max(1.0, std::fabs(x)); }

// Every field of for_each_config_field: a field added to GptOssConfig is compared without a change here.
void compare_config(const GptOssConfig& a, const GptOssConfig& b, ModelComparison& out) {
  for_each_config_field(
      [&](const ConfigField& field, const auto& x, const auto& y) {
        bool same = x == y;
        if constexpr (std::is_same_v<std::decay_t<decltype(x)>, double>)
          if (field.compare == ConfigCompare::F32Rounding) same = within_f32_rounding(x, y);
        if (same) return;
        std::string text = std::string(field.name) + ": " + config_difference_text(x, y);
        if (field.compare == ConfigCompare::Note) {
          out.config_notes.push_back(text + " (" + std::string(field.note) + ")");
        } else {
          out.config_differences.push_back(std::move(text));
        }
      },
      a, b);
}

void compare_tokenizers(const CanonicalModel& a, const CanonicalModel& b, ModelComparison& out) {
  if (!a.tokenizer || !b.tokenizer) {
    if (a.tokenizer || b.tokenizer) out.config_notes.push_back("only one side has a tokenizer");
    return;
  }
  const auto& x = *a.tokenizer;
  const auto& y = *b.tokenizer;
  // Text tokens are compared over the shared ids that both sides actually define.
  size_t mismatched = 0;
  std::string first;
  for (size_t id = 0; id < std::min(x.size(), y.size()); ++id) {
    if (x.types[id] == TokenType::Unused || y.types[id] == TokenType::Unused) continue;
    if (x.tokens[id] != y.tokens[id]) {
      if (!mismatched) first = "id " + std::to_string(id);
      ++mismatched;
    }
  }
  if (mismatched) out.tokenizer_differences.push_back(std::to_string(mismatched) + " tokens differ (first: " + first + ")");
  if (x.size() != y.size())
    out.config_notes.push_back("tokenizer sizes " + std::to_string(x.size()) + " vs " + std::to_string(y.size()));
}
}  // namespace

ModelComparison compare_models(const CanonicalModel& a, const CanonicalModel& b, unsigned threads) {
  ModelComparison out;
  compare_config(a.config, b.config, out);
  compare_tokenizers(a, b, out);
  const auto da = canonical_digests(a, threads);
  const auto db = canonical_digests(b, threads);
  out.digest_a = model_digest(da);
  out.digest_b = model_digest(db);
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const auto& ta = a.tensors[i];
    TensorComparison c;
    c.name = ta.spec.name;
    c.dtype_a = std::string(dtype_name(ta.dtype));
    const CanonicalTensor* tb = b.find(ta.spec.name);
    if (!tb) {
      c.verdict = Verdict::Missing;
      out.tensors.push_back(c);
      continue;
    }
    c.dtype_b = std::string(dtype_name(tb->dtype));
    const std::string& digest_b = db[static_cast<size_t>(tb - b.tensors.data())].sha256;
    if (da[i].sha256 == digest_b) {
      const bool plain = ta.dtype == tb->dtype && ta.source->contiguous() && tb->source->contiguous();
      c.verdict = plain ? Verdict::Identical : Verdict::IdenticalAfterTransform;
      out.tensors.push_back(c);
      continue;
    }
    const bool forms_differ = expert_forms_differ(a, b, ta);
    if (forms_differ && !is_expert_matrix_role(ta.spec.role)) {
      // The pair's scales: their values are compared in the matrix's comparison, which comes first.
      const std::string matrix = expert_matrix_of(a, ta).spec.name;
      for (const auto& m : out.tensors) {
        if (m.name != matrix) continue;
        c.verdict = m.verdict;
        c.max_abs_error = m.max_abs_error;
        c.max_rel_error = m.max_rel_error;
        c.relative_rms_error = m.relative_rms_error;
      }
      c.detail = "scales of the MXFP4 pair on one side only: compared as values with " + matrix;
      out.tensors.push_back(c);
      continue;
    }
    const CanonicalTensor va = forms_differ ? expert_values(a, ta) : ta;
    const CanonicalTensor vb = forms_differ ? expert_values(b, *tb) : *tb;
    c.dtype_a = std::string(dtype_name(va.dtype));  // MXFP4 for a pair read as values
    c.dtype_b = std::string(dtype_name(vb.dtype));
    if (holds_mxfp4(va) || va.spec.shape.size() != vb.spec.shape.size()) {
      c.verdict = Verdict::Different;
      c.detail = "MXFP4 bytes differ";
      out.tensors.push_back(c);
      continue;
    }
    const bool vocab_rows = (va.spec.role == TensorRole::Embedding || va.spec.role == TensorRole::Unembedding) &&
                            va.spec.shape[0] != vb.spec.shape[0];
    // Rows of the innermost dimension: every one (an expert matrix [E, rows, in] has E x rows of
    // them), or the vocabulary rows both sides hold.
    uint64_t rows = vocab_rows ? std::min(va.spec.shape[0], vb.spec.shape[0]) : 1;
    if (!vocab_rows)
      for (size_t d = 0; d + 1 < va.spec.shape.size(); ++d) rows *= va.spec.shape[d];
    if (va.spec.shape != vb.spec.shape && !vocab_rows) {
      c.verdict = Verdict::Different;
      c.detail = "shapes differ";
      out.tensors.push_back(c);
      continue;
    }
    const auto m = measure_declared_loss(va, vb, rows);
    c.max_abs_error = m.max_abs_error;
    c.max_rel_error = m.max_reference > 0 ? m.max_abs_error / m.max_reference : m.max_abs_error;
    c.relative_rms_error = m.relative_rms_error();
    // A side in one of ggml's quantizations without a per-element bound declares its loss as a
    // relative RMS error up to its type's ceiling.
    const double ceiling = va.dtype == vb.dtype ? 0 : std::max(rms_error_ceiling(va.dtype), rms_error_ceiling(vb.dtype));
    std::ostringstream rms;
    if (ceiling > 0) rms << "relative RMS error " << c.relative_rms_error << " (" << dtype_name(has_per_element_bound(va.dtype) ? vb.dtype : va.dtype) << " allows " << ceiling << ")";
    const std::string vocabulary = vocab_rows ? "vocabulary rows " + std::to_string(va.spec.shape[0]) + " vs " +
                                                    std::to_string(vb.spec.shape[0]) + ", the first " + std::to_string(rows) + " compared"
                                              : "";
    if (m.nan) {
      c.verdict = Verdict::Different;
      c.detail = std::to_string(m.nan) + " NaN values";
    } else if (m.beyond) {
      std::ostringstream d;
      d << m.beyond << " values differ by more than " << (va.dtype == vb.dtype ? "nothing (same encoding)" : c.dtype_a + " vs " + c.dtype_b + " rounding allows")
        << "; first at element " << m.first_beyond << ": error " << m.first_beyond_error << ", allowed " << m.first_beyond_allowance;
      c.verdict = Verdict::Different;
      c.detail = d.str();
    } else if (ceiling > 0 && !(c.relative_rms_error <= ceiling)) {
      c.verdict = Verdict::Different;
      c.detail = rms.str() + ": more than quantization gives";
    } else if (va.dtype != vb.dtype || vocab_rows) {
      c.verdict = Verdict::LossyAsDeclared;
      c.detail = ceiling > 0               ? c.dtype_a + " vs " + c.dtype_b + ": " + rms.str()
                 : va.dtype != vb.dtype ? c.dtype_a + " vs " + c.dtype_b + ": every error within the rounding the encodings allow"
                                         : "";
      if (vocab_rows) c.detail += (c.detail.empty() ? "" : "; ") + vocabulary;
    } else {
      c.verdict = Verdict::Different;
      c.detail = "same encoding, same values, different bytes (signed zeros)";
    }
    out.tensors.push_back(c);
  }
  for (const auto& tb : b.tensors)
    if (!a.find(tb.spec.name)) out.tensors.push_back({tb.spec.name, Verdict::Missing, "", std::string(dtype_name(tb.dtype)), 0, 0, "only in B"});
  return out;
}

std::string ModelComparison::to_table() const {
  std::ostringstream s;
  size_t counts[5] = {};
  for (const auto& t : tensors) {
    ++counts[static_cast<int>(t.verdict)];
    if (t.verdict == Verdict::Identical) continue;
    s << "  " << t.name << ": " << verdict_name(t.verdict) << " (" << t.dtype_a << " vs " << t.dtype_b << ")";
    if (t.verdict == Verdict::LossyAsDeclared || t.verdict == Verdict::Different)
      s << " max abs error " << t.max_abs_error << ", max rel error " << t.max_rel_error;
    if (!t.detail.empty()) s << "; " << t.detail;
    s << "\n";
  }
  for (const auto& d : config_differences) s << "  config: " << d << "\n";
  for (const auto& d : config_notes) s << "  note: " << d << "\n";
  for (const auto& d : tokenizer_differences) s << "  tokenizer: " << d << "\n";
  s << "tensors: " << counts[0] << " identical, " << counts[1] << " identical after layout transform, " << counts[2]
    << " lossy as declared, " << counts[3] << " different, " << counts[4] << " missing\n";
  s << "model digest A " << digest_a << "\nmodel digest B " << digest_b << "\n";
  return s.str();
}

nlohmann::json ModelComparison::to_json() const {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& t : tensors)
    arr.push_back({{"name", t.name}, {"verdict", verdict_name(t.verdict)}, {"dtype_a", t.dtype_a}, {"dtype_b", t.dtype_b},
                   {"max_abs_error", t.max_abs_error}, {"max_rel_error", t.max_rel_error},
                   {"relative_rms_error", t.relative_rms_error}, {"detail", t.detail}});
  return {{"tensors", arr}, {"config_differences", config_differences}, {"config_notes", config_notes},
          {"tokenizer_differences", tokenizer_differences}, {"model_digest_a", digest_a}, {"model_digest_b", digest_b},
          {"same", !any_different()}};
}

}  // namespace gptoss

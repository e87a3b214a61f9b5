#include "verify/structural.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "convert/gguf/gguf_names.h"
#include "convert/model_io.h"
#include "convert/modelbin/modelbin_config.h"
#include "convert/safetensors_model.h"
#include "formats/core/error.h"
#include "formats/core/checked_math.h"
#include "formats/core/json_value.h"
#include "formats/core/mapped_file.h"
#include "formats/gguf/gguf_file.h"
#include "formats/gguf/gguf_split.h"
#include "formats/modelbin/modelbin_file.h"
#include "formats/safetensors/safetensors_checkpoint.h"

namespace gptoss {
namespace fs = std::filesystem;

nlohmann::json VerifyResult::to_json() const {
  nlohmann::json j = report.to_json();
  j["format"] = format;
  if (!stats.empty()) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& s : stats) {
      nlohmann::json t = {{"name", s.name}, {"dtype", s.dtype}, {"elements", s.elements}, {"nan", s.nan},
                          {"inf", s.inf}, {"zeros", s.zeros}, {"abs_max", s.abs_max}};
      if (s.scale_min >= 0) t["scale_byte_range"] = {s.scale_min, s.scale_max};
      if (s.q8_0)
        t["q8_0_scales"] = {{"blocks", s.q8_0->blocks}, {"range", {s.q8_0->min, s.q8_0->max}},
                            {"non_finite", s.q8_0->non_finite}, {"negative", s.q8_0->negative},
                            {"zero_with_data", s.q8_0->zero_with_data}, {"minus_128", s.q8_0->minus_128}};
      arr.push_back(t);
    }
    j["tensors"] = arr;
  }
  return j;
}

namespace {
// Every tensor a container lists, with its file (for the extra-tensor check).
using StoredList = std::vector<std::pair<std::string, StoredTensorRange>>;

StoredList check_safetensors_container(const fs::path& path, Report& report) {
  const auto ck = SafetensorsCheckpoint::open(path);
  StoredList stored;
  for (const auto& f : ck.files()) {
    const auto bytes = f->mapped()->bytes();
    const uint64_t n = f->header_size();
    if (n > 0 && bytes[8] != '{')
      report.warning("header", f->path(), "header", "JSON does not start with '{' (some readers require it)", "'{'", 8);
    if (n % 8 != 0)
      report.warning("padding", f->path(), "header", "header length " + std::to_string(n) + " is not a multiple of 8; "
                     "tensor data may be misaligned", "multiple of 8", 0);
    for (uint64_t i = n; i > 0 && bytes[8 + i - 1] != '}'; --i)
      if (bytes[8 + i - 1] != ' ') {
        report.warning("padding", f->path(), "header", "header padding byte is not a space", "0x20", 8 + i - 1);
        break;
      }
    for (auto& t : f->stored_tensors()) stored.push_back({f->path(), std::move(t)});
    for (const auto& t : f->tensors()) {
      const uint64_t align = std::min<uint64_t>(dtype_info(t.dtype).block_bytes, 8);
      if ((f->data_offset() + t.begin) % align != 0)
        report.warning("alignment", f->path(), t.name, "tensor data is not aligned to its element size",
                       std::to_string(align) + "-byte alignment", f->data_offset() + t.begin);
    }
  }
  // total_size is informative (transformers does not read it): a wrong one is a warning.
  if (const auto& said = ck.shards().index_total_size; ck.has_index() && !said.is_null()) {
    uint64_t total = 0;
    for (const auto& f : ck.files())
      for (const auto& t : f->tensors()) total += t.size();
    const auto bytes = JsonValue::uint_within(said, UINT64_MAX);
    if (bytes != total)
      report.warning("index", ck.shards().index->string(), "metadata.total_size",
                     "says " + (bytes ? std::to_string(*bytes) + " bytes" : describe_json_value(said)),
                     std::to_string(total));
  }
  return stored;
}
// Reports the first non-zero byte in [begin, end) of a file as a padding finding.
void check_zero_gap(std::span<const uint8_t> bytes, uint64_t begin, uint64_t end, const std::string& file,
                    const std::string& where, Report& report) {
  for (uint64_t i = begin; i < end && i < bytes.size(); ++i)
    if (bytes[i] != 0) {
      report.warning("padding", file, where, "padding byte is " + std::to_string(bytes[i]), "0", i);
      return;
    }
}

StoredList check_gguf_container(const fs::path& path, Report& report) {
  const auto set = GgufModelFiles::open(path);
  StoredList stored;
  for (const auto& f : set.files()) {
    const auto bytes = f.mapped()->bytes();
    const auto& tensors = f.tensors();
    const uint64_t data = f.data_offset();
    for (auto& t : f.stored_tensors()) stored.push_back({f.path(), std::move(t)});
    if (!tensors.empty()) {
      // The gap between the last tensor-info record and the aligned data section.
      uint64_t infos_end = 0;
      for (const auto& t : tensors) infos_end = std::max(infos_end, t.info_end());
      check_zero_gap(bytes, infos_end, data, f.path(), "before the data section", report);
    }
    for (size_t i = 0; i < tensors.size(); ++i) {
      const auto& t = tensors[i];
      const uint64_t end = data + t.offset + t.size;
      const uint64_t next = i + 1 < tensors.size() ? data + tensors[i + 1].offset : align_up(end, f.alignment());
      check_zero_gap(bytes, end, next, f.path(), t.name, report);
      if (t.name.size() >= 64)
        report.error("name", f.path(), t.name, "tensor name is " + std::to_string(t.name.size()) + " bytes; llama.cpp "
                     "limits names to 63", "< 64 bytes", t.info_offset);
    }
    if (!tensors.empty()) {
      const auto& last = tensors.back();
      const uint64_t end = align_up(data + last.offset + last.size, f.alignment());
      if (end != bytes.size())
        report.warning("padding", f.path(), last.name, "file ends at " + std::to_string(bytes.size()) +
                       ", not at the padded end of the last tensor", std::to_string(end));
    }
  }
  return stored;
}

void check_modelbin_container(const fs::path& path, Report& report) {
  const auto bin = modelbin::ModelBinFile::open(path);
  const auto bytes = bin.mapped()->bytes();
  auto regions = bin.layout().write_order();
  std::sort(regions.begin(), regions.end(), [](const auto& a, const auto& b) { return a.region.offset < b.region.offset; });
  uint64_t previous_end = bin.layout().tokenizer_end;
  std::string previous = "tokenizer";
  for (const auto& r : regions) {
    if (r.region.offset < previous_end)
      report.error("layout", bin.path(), r.name, "overlaps " + previous, "offset >= " + std::to_string(previous_end),
                   r.region.offset);
    else
      check_zero_gap(bytes, previous_end, r.region.offset, bin.path(), "after " + previous, report);
    previous_end = std::max(previous_end, r.region.end());
    previous = r.name;
  }
  if (previous_end != bytes.size())
    report.warning("padding", bin.path(), "end of file", "file has " + std::to_string(bytes.size() - previous_end) +
                   " bytes after the last MoE block", "none");
}
// The model.bin header's YaRN and context fields against the config they read back as: a stored
// value no config produces is a finding at the field's offset (the reader only notes it).
void check_modelbin_header(const fs::path& path, const GptOssConfig& config, Report& report) {
  const auto bin = modelbin::ModelBinFile::open(path);
  for (const auto& f : modelbin_header_inconsistencies(bin.header(), config))
    report.warning("config", bin.path(), f.field, "is " + f.found, f.expected, f.offset);
}
// Stored tensors the model does not use: readers skip them, so nothing else would notice.
void check_extra_tensors(const StoredList& stored, ModelFormat format, const GptOssConfig& config, Report& report) {
  if (format == ModelFormat::ModelBin) return;  // no tensor directory: the header fixes the set
  std::set<std::string> expected;
  if (format == ModelFormat::Gguf) {
    for (const auto& g : gguf_tensor_names(config.num_layers)) expected.insert(g.name);
  } else {
    const bool original = std::any_of(stored.begin(), stored.end(), [](const auto& s) { return s.second.name == "embedding.weight"; });
    for (const auto& spec : canonical_tensor_specs(config))
      expected.insert(layout_tensor_name(original ? CheckpointLayout::Original : CheckpointLayout::HuggingFace, spec.role, spec.layer));
  }
  for (const auto& [file, t] : stored)
    if (!expected.count(t.name))
      report.warning("extra", file, t.name, "tensor is not part of the GPT-OSS model (readers skip it)",
                     "only the tensors of the config", t.offset);
}
}  // namespace

void check_model_consistency(const CanonicalModel& model, const std::string& file, Report& report) {
  const auto& c = model.config;
  const auto y = compute_yarn(c);
  if (!(y.low > 0 && y.low < y.high && y.high < c.head_dim / 2.0 - 1))
    report.warning("config", file, "rope_scaling", "YaRN correction range [" + std::to_string(y.low) + ", " +
                   std::to_string(y.high) + "] is outside what OpenAI's reference accepts", "0 < low < high < head_dim/2 - 1");
  const double expected_ctx = c.rope_scaling_factor * c.rope_original_context;
  if (std::fabs(static_cast<double>(c.max_position_embeddings) - expected_ctx) > 0.5)
    report.warning("config", file, "max_position_embeddings", std::to_string(c.max_position_embeddings) +
                   " is not factor x original context", std::to_string(static_cast<uint64_t>(expected_ctx)));
  for (uint32_t l = 0; l < c.num_layers; ++l)
    if (c.is_sliding(l) != (l % 2 == 0)) {
      report.info("config", file, "layer_types", "sliding layers are not the even layers of gpt-oss");
      break;
    }
  if (c.sliding_window >= c.max_position_embeddings)
    report.warning("config", file, "sliding_window", "window covers the whole context", "< context length");
  if (c.swiglu_limit != 7.0) report.info("config", file, "swiglu_limit", "is " + std::to_string(c.swiglu_limit) + ", gpt-oss uses 7");
  if (model.tokenizer) {
    const auto& t = *model.tokenizer;
    uint64_t defined = 0;
    for (auto type : t.types) defined += type != TokenType::Unused;
    if (t.size() > c.vocab_size)
      report.error("tokenizer", file, "vocabulary", "tokenizer defines ids up to " + std::to_string(t.size() - 1) +
                   " but the embedding has " + std::to_string(c.vocab_size) + " rows", "<= vocab_size");
    for (auto [name, id] : {std::pair{"bos", t.bos_id}, {"eos", t.eos_id}, {"pad", t.pad_id}}) {
      const std::string item = std::string(name) + "_token_id";
      if (id && *id >= t.size())
        report.error("tokenizer", file, item, "id " + std::to_string(*id) + " is beyond the tokenizer's " +
                     std::to_string(t.size()) + " tokens", "a special token id < " + std::to_string(t.size()));
      else if (id && !t.is_special(*id))
        report.error("tokenizer", file, item, "id " + std::to_string(*id) + " (\"" + t.tokens[*id] +
                     "\") is not a special token of the tokenizer", "a special (control) token");
    }
    if (t.eos_id && *t.eos_id < t.size() && t.tokens[*t.eos_id] != "<|return|>")
      report.warning("tokenizer", file, "eos_token_id", "eos is \"" + t.tokens[*t.eos_id] + "\"", "<|return|>");
    if (defined == 0) report.error("tokenizer", file, "tokens", "tokenizer has no tokens");
  } else {
    report.info("tokenizer", file, "", "no tokenizer found beside the weights");
  }
  for (const auto& note : model.notes) report.info("model", file, "", note);
}

VerifyResult verify_model(const fs::path& path, const VerifyOptions& options) {
  VerifyResult result;
  const uint64_t shrink_events = MappedFile::shrink_events();  // a file shrinking under us is an error, not a finding
  const ModelFormat format = detect_input_format(path);
  result.format = format_name(format);
  StoredList stored;
  switch (format) {
    case ModelFormat::Safetensors: stored = check_safetensors_container(path, result.report); break;
    case ModelFormat::Gguf: stored = check_gguf_container(path, result.report); break;
    case ModelFormat::ModelBin: check_modelbin_container(path, result.report); break;
    case ModelFormat::Synthesized: break;  // generated as it is read: no container
  }
  // The container parsed: whatever stops it from being a complete, consistent GPT-OSS model is
  // a finding (exit 1), not an unreadable input (exit 2).
  CanonicalModel model;
  try {
    model = load_model(path);
  } catch (const FormatError& e) {
    MappedFile::throw_if_shrunk_since(shrink_events);
    result.report.error("model", e.file(), e.field(), e.message(),
                        e.field() == "tensors" ? "every tensor of the config's canonical set once, with the config's "
                                                 "shape and an encoding its role allows"
                                               : "a complete, consistent GPT-OSS model",
                        e.offset());
    return result;
  }
  check_model_consistency(model, path.string(), result.report);
  check_extra_tensors(stored, format, model.config, result.report);
  if (format == ModelFormat::ModelBin) check_modelbin_header(path, model.config, result.report);
  if (options.values) result.stats = check_values(model, path.string(), result.report, options.threads);
  MappedFile::throw_if_shrunk_since(shrink_events);
  return result;
}

}  // namespace gptoss

#include "runtime/eval/reference_logits_file.h"

#include <array>
#include <cmath>
#include <cstring>

#include <nlohmann/json.hpp>

#include "formats/core/error.h"
#include "formats/core/float16.h"
#include "formats/core/json_value.h"
#include "formats/core/mapped_file.h"
#include "verify/canonical_digest.h"

namespace gptoss::eval {
namespace {

constexpr const char* kMagicLine = "gptoss-eval reference distributions\n";
constexpr uint32_t kVersion = 1;
constexpr size_t kRecordPrefix = 12;
constexpr uint64_t kMaxHeaderBytes = 256u << 20;

const std::array<float, 65536>& f16_table() {
  static const auto table = [] {
    std::array<float, 65536> t{};
    for (uint32_t h = 0; h < 65536; ++h) t[h] = f16_to_f32(static_cast<uint16_t>(h));
    return t;
  }();
  return table;
}

void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t get_u32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}
void put_f32(uint8_t* p, float v) { put_u32(p, std::bit_cast<uint32_t>(v)); }
float get_f32(const uint8_t* p) { return std::bit_cast<float>(get_u32(p)); }

}  // namespace

uint64_t ReferenceLogitsHeader::scored_positions() const { return uint64_t{chunks} * (ctx - 1 - ctx / 2); }
size_t ReferenceLogitsHeader::record_bytes() const { return kRecordPrefix + 2 * size_t{vocab_size}; }

std::vector<uint8_t> encode_reference_record(std::span<const float> logits, const RowSummary& summary, uint32_t next_token) {
  const size_t vocab = logits.size();
  std::vector<uint8_t> record(kRecordPrefix + 2 * vocab);
  const double nll = summary.log_norm - logits[next_token];
  const double log_p_top = summary.max - summary.log_norm;
  put_f32(record.data(), static_cast<float>(nll));
  put_u32(record.data() + 4, summary.argmax);
  put_f32(record.data() + 8, static_cast<float>(log_p_top));
  // H(P) = -E_P[log P]: log P(i) + H is near 0 for the tokens that carry the mass, where f16 is
  // finest (11 significant bits: 2^-11 absolute below 1, 2^-7 between 8 and 16).
  double entropy = 0;
  for (size_t i = 0; i < vocab; ++i) {
    const double log_p = static_cast<double>(logits[i]) - summary.log_norm;
    entropy -= static_cast<double>(exp_nonpositive(static_cast<float>(log_p))) * log_p;
  }
  uint8_t* low = record.data() + kRecordPrefix;
  uint8_t* high = low + vocab;
  for (size_t i = 0; i < vocab; ++i) {
    const uint16_t h = f32_to_f16(static_cast<float>(static_cast<double>(logits[i]) - summary.log_norm + entropy));
    low[i] = static_cast<uint8_t>(h);
    high[i] = static_cast<uint8_t>(h >> 8);
  }
  return record;
}

// ---- writer ----

ReferenceLogitsWriter::ReferenceLogitsWriter(const std::filesystem::path& path, const ReferenceLogitsHeader& h, int level)
    : out_(path), expected_(h.scored_positions()), level_(level) {
  nlohmann::ordered_json j;
  j["format"] = "gptoss-eval reference distributions";
  j["version"] = kVersion;
  j["model"] = {{"digest", h.model_digest}, {"source", h.model_source}, {"vocab_size", h.vocab_size}};
  j["tokenizer"] = {{"digest", h.tokenizer_digest}};
  j["text"] = {{"sha256", h.text_sha256}, {"bytes", h.text_bytes}};
  j["chunking"] = {{"ctx", h.ctx},
                   {"chunks", h.chunks},
                   {"first_scored", h.ctx / 2},
                   {"scored_per_chunk", h.ctx - 1 - h.ctx / 2},
                   {"bos", false}};
  j["computed_by"] = {{"engine", h.engine}, {"device", h.device}};
  j["record"] = {{"bytes", h.record_bytes()},
                 {"layout",
                  "f32 nll, u32 top, f32 log_p_top, then vocab_size f16 values of log P(i) + H(P) (H: the "
                  "entropy): every low byte, then every high byte; little-endian"},
                 {"compression", "one zstd frame per scored position, level " + std::to_string(level)}};
  j["positions"] = expected_;
  j["tokens"] = h.tokens;
  const std::string text = kMagicLine + j.dump() + "\n";
  const auto frame = zstd_compress_frame({reinterpret_cast<const uint8_t*>(text.data()), text.size()}, level);
  out_.write(frame);
}

void ReferenceLogitsWriter::write_frame(std::span<const uint8_t> frame) {
  out_.write(frame);
  ++written_;
}

void ReferenceLogitsWriter::commit() {
  if (written_ != expected_)
    throw std::logic_error("reference logits file: " + std::to_string(written_) + " records written, the header promises " +
                           std::to_string(expected_));
  out_.commit();
}

// ---- reader ----

ReferenceLogitsReader::ReferenceLogitsReader(const std::filesystem::path& path) : path_(path.string()) {
  frames_ = std::make_unique<ZstdFrameReader>(MappedFile::open(path));
  const auto header_frame = frames_->next("header", kMaxHeaderBytes);
  const auto bytes = frames_->decompress(header_frame, "header");
  const std::string text(bytes.begin(), bytes.end());
  const std::string magic = kMagicLine;
  if (text.compare(0, magic.size(), magic) != 0)
    throw_format_error(path_, "header", 0, "not a gptoss-eval reference distributions file (its first line is not \"" +
                                               magic.substr(0, magic.size() - 1) + "\")");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.substr(magic.size()));
  } catch (const nlohmann::json::exception& e) {
    throw_format_error(path_, "header", 0, std::string("unreadable JSON: ") + e.what());
  }
  // Every field through JsonValue: a missing field or a wrong type names its path
  // ("header.chunking.ctx: expected a non-negative integer below 2^32, found the string \"x\"").
  const JsonValue h(j, path_, 0, "header");
  const JsonValue version = h.at("version");
  if (version.as_u32() != kVersion)
    version.fail("version " + version.raw().dump() + "; this build reads version " + std::to_string(kVersion));
  const JsonValue model = h.at("model");
  header_.model_digest = model.get<std::string>("digest");
  header_.model_source = model.get<std::string>("source");
  header_.vocab_size = model.get<uint32_t>("vocab_size");
  header_.tokenizer_digest = h.at("tokenizer").get<std::string>("digest");
  const JsonValue text_field = h.at("text");
  header_.text_sha256 = text_field.get<std::string>("sha256");
  header_.text_bytes = text_field.at("bytes").as_uint(UINT64_MAX);
  const JsonValue chunking = h.at("chunking");
  header_.ctx = chunking.get<uint32_t>("ctx");
  header_.chunks = chunking.get<uint32_t>("chunks");
  const JsonValue computed_by = h.at("computed_by");
  header_.engine = computed_by.get<std::string>("engine");
  header_.device = computed_by.get<std::string>("device");
  for (const auto& id : h.at("tokens").elements()) header_.tokens.push_back(id.as_u32());
  if (header_.ctx < 4 || header_.chunks == 0 || header_.vocab_size == 0)
    throw_format_error(path_, "header.chunking", 0, "ctx, chunks and vocab_size must be positive (ctx >= 4)");
  if (header_.tokens.size() != uint64_t{header_.ctx} * header_.chunks)
    throw_format_error(path_, "header.tokens", 0,
                       std::to_string(header_.tokens.size()) + " ids, expected ctx x chunks = " +
                           std::to_string(uint64_t{header_.ctx} * header_.chunks));
  const JsonValue record_bytes = h.at("record").at("bytes");
  if (record_bytes.as_uint(UINT64_MAX) != header_.record_bytes())
    record_bytes.fail("records of " + record_bytes.raw().dump() + " bytes, expected 12 + 2 x vocab_size = " +
                      std::to_string(header_.record_bytes()));
}

uint64_t ReferenceLogitsReader::file_bytes() const { return frames_->file().size(); }

std::vector<ZstdFrameReader::Frame> ReferenceLogitsReader::next_chunk() {
  if (chunks_read_ >= header_.chunks)
    throw std::logic_error("reference logits file: every chunk was read already");
  std::vector<ZstdFrameReader::Frame> frames;
  const uint32_t scored = header_.ctx - 1 - header_.ctx / 2;
  for (uint32_t p = 0; p < scored; ++p)
    frames.push_back(frames_->next("chunk " + std::to_string(chunks_read_) + " position " + std::to_string(p),
                                   header_.record_bytes()));
  ++chunks_read_;
  return frames;
}

ReferenceRecord ReferenceLogitsReader::decode(const ZstdFrameReader::Frame& frame, std::vector<uint8_t>& raw,
                                              std::span<float> values) const {
  raw.resize(header_.record_bytes());
  frames_->decompress(frame, raw, "record");
  const size_t vocab = header_.vocab_size;
  if (values.size() != vocab) throw std::invalid_argument("ReferenceLogitsReader::decode: wrong row size");
  ReferenceRecord r;
  r.nll = get_f32(raw.data());
  r.top = get_u32(raw.data() + 4);
  r.log_p_top = get_f32(raw.data() + 8);
  if (r.top >= vocab) throw_format_error(path_, "record.top", frame.offset, "token " + std::to_string(r.top) + " is outside the vocabulary");
  const auto& table = f16_table();
  const uint8_t* low = raw.data() + kRecordPrefix;
  const uint8_t* high = low + vocab;
  for (size_t i = 0; i < vocab; ++i) values[i] = table[uint32_t{low[i]} | uint32_t{high[i]} << 8];
  r.relative_log_probs = values;
  return r;
}

void ReferenceLogitsReader::expect_end() const {
  if (!frames_->at_end())
    throw_format_error(path_, "after the last record", frames_->offset(),
                       std::to_string(frames_->file().size() - frames_->offset()) + " bytes follow the " +
                           std::to_string(header_.scored_positions()) + " records the header promises");
}

void ReferenceLogitsReader::require_compatible(const ReferenceLogitsHeader& run) const {
  eval::require_compatible(path_, header_, run);
}

// ---- what makes a file this run's reference ----

namespace {

using Header = ReferenceLogitsHeader;
// The file's value and the run's, as a refusal shows them: equal when they agree.
using Shown = std::pair<std::string, std::string>;

std::string shown(const std::string& value) { return value; }
std::string shown(uint32_t value) { return std::to_string(value); }
template <auto Field>
Shown value_of(const Header& file, const Header& run) {
  return {shown(file.*Field), shown(run.*Field)};
}
Shown ids_of(const Header& file, const Header& run) {
  return file.tokens == run.tokens ? Shown{} : Shown{"other token ids", "these"};
}

struct CompatibilityRule {
  const char* field;  // the header's JSON field, as the refusal names it
  const char* what;   // the refusal's words for the value
  Shown (*values)(const Header& file, const Header& run);
};
// In the order checked: the cheap and telling differences before the model's digest.
constexpr CompatibilityRule kCompatibility[] = {
    {"text.sha256", "the text with SHA-256", value_of<&Header::text_sha256>},
    {"tokenizer.digest", "the tokenizer with digest", value_of<&Header::tokenizer_digest>},
    {"chunking.ctx", "--ctx", value_of<&Header::ctx>},
    {"chunking.chunks", "--chunks", value_of<&Header::chunks>},
    {"model.vocab_size", "a vocabulary of", value_of<&Header::vocab_size>},
    {"tokens", "the text as", ids_of},
    {"model.digest", "the model with canonical digest", value_of<&Header::model_digest>},
};

}  // namespace

void require_compatible(const std::string& path, const ReferenceLogitsHeader& file, const ReferenceLogitsHeader& run) {
  for (const auto& rule : kCompatibility) {
    const auto [in_file, in_run] = rule.values(file, run);
    if (in_file != in_run)
      throw_format_error(path, rule.field, std::nullopt,
                         std::string("the file holds the reference's distributions for ") + rule.what + " " + in_file +
                             ", this run has " + in_run + ": refusing to compare against it");
  }
}

ReferenceLogitsHeader run_header(const CanonicalModel& reference, const std::string& source,
                                 const std::string& tokenizer_digest, std::string_view text, const ChunkPlan& plan,
                                 std::vector<uint32_t> tokens) {
  ReferenceLogitsHeader h;
  h.model_digest = model_digest(canonical_digests(reference));
  h.model_source = source;
  h.vocab_size = reference.config.vocab_size;
  h.tokenizer_digest = tokenizer_digest;
  h.text_sha256 = sha256_of({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
  h.text_bytes = text.size();
  h.ctx = plan.ctx;
  h.chunks = plan.chunks;
  h.tokens = std::move(tokens);
  return h;
}

}  // namespace gptoss::eval

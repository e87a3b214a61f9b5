#include "formats/modelbin/modelbin_file.h"

#include <algorithm>
#include <cstring>

#include "formats/core/checked_math.h"
#include "formats/core/error.h"

namespace gptoss::modelbin {
namespace {

Uuid read_uuid(ByteReader& r, std::string_view field) {
  Uuid u;
  auto b = r.bytes(16, field);
  std::copy(b.begin(), b.end(), u.begin());
  return u;
}

void expect_uuid(ByteReader& r, std::string_view field, const Uuid& expected, const char* what) {
  const uint64_t at = r.file_offset();
  const Uuid got = read_uuid(r, field);
  if (got != expected)
    throw_format_error(r.file(), std::string(field), at,
                       std::string("expected ") + what + " UUID " + uuid_to_string(expected) + ", found " +
                           uuid_to_string(got));
}

std::string hex_bytes(std::span<const uint8_t> bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (uint8_t b : bytes) {
    if (!out.empty()) out += ' ';
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

}  // namespace

ModelBinFile ModelBinFile::open(const std::filesystem::path& path) { return parse(MappedFile::open(path)); }

std::vector<StoredTensorRange> ModelBinFile::stored_tensors() const {
  std::vector<StoredTensorRange> out;
  for (const auto& r : layout_.write_order()) out.push_back({r.name, r.region.offset, r.region.size});
  return out;
}

ModelBinFile ModelBinFile::parse(std::shared_ptr<const MappedFile> file) {
  ModelBinFile f;
  f.file_ = std::move(file);
  const std::string& name = f.file_->path();
  const uint64_t file_size = f.file_->size();
  ByteReader r(f.file_->bytes(), name);

  // File header: magic + a u32 that must be zero.
  const auto magic = r.bytes(kMagic.size(), "magic");
  if (!std::equal(magic.begin(), magic.end(), kMagic.begin()))
    throw_format_error(name, "magic", 0, "expected \"GPT-OSS v1.0\" (a GPT-OSS Metal model.bin), found bytes " + hex_bytes(magic));
  const uint32_t reserved = r.u32("file_header.reserved");
  if (reserved != 0)
    throw_format_error(name, "file_header.reserved", 12, "must be 0, found " + std::to_string(reserved));
  expect_uuid(r, "model_uuid", kGptOssModelUuid, "the gpt-oss model");

  ModelHeader& h = f.header_;
  h.context_length = r.u32("model_header.context_length");
  h.num_blocks = r.u32("model_header.num_blocks");
  h.num_experts = r.u32("model_header.num_experts");
  h.num_active_experts = r.u32("model_header.num_active_experts");
  h.embedding_dim = r.u32("model_header.embedding_dim");
  h.mlp_dim = r.u32("model_header.mlp_dim");
  h.swiglu_limit = r.f32("model_header.swiglu_limit");
  h.head_dim = r.u32("model_header.head_dim");
  h.num_heads = r.u32("model_header.num_heads");
  h.num_kv_heads = r.u32("model_header.num_kv_heads");
  h.attention_window = r.u32("model_header.attention_window");
  h.rope_theta = r.f32("model_header.rope_theta");
  h.interpolation_scale = r.f32("model_header.interpolation_scale");
  h.yarn_offset = r.f32("model_header.yarn_offset");
  h.yarn_scale = r.f32("model_header.yarn_scale");
  h.yarn_multiplier = r.f32("model_header.yarn_multiplier");
  h.rmsnorm_epsilon = r.f32("model_header.rmsnorm_epsilon");
  expect_uuid(r, "layout_uuid", kAppleGpuLayoutUuid, "the Apple GPU layout");
  expect_uuid(r, "tokenizer_uuid", kTiktokenTokenizerUuid, "the tiktoken tokenizer");

  TokenizerHeader& t = f.tokenizer_;
  t.num_special_tokens = r.u32("tokenizer_header.num_special_tokens");
  t.num_text_tokens = r.u32("tokenizer_header.num_text_tokens");
  t.regex_size = r.u32("tokenizer_header.regex_size");
  t.tokens_size = r.u32("tokenizer_header.tokens_size");

  // Special-token table, checked against the file before it is allocated.
  const uint64_t table_bytes = uint64_t{t.num_special_tokens} * 16;
  if (table_bytes > r.remaining())
    throw_format_error(name, "special_token_table", r.file_offset(),
                       "tokenizer_header.num_special_tokens = " + std::to_string(t.num_special_tokens) + " needs " +
                           std::to_string(table_bytes) + " bytes but only " + std::to_string(r.remaining()) +
                           " remain in the file");
  f.special_uuids_.reserve(t.num_special_tokens);
  for (uint32_t i = 0; i < t.num_special_tokens; ++i) f.special_uuids_.push_back(read_uuid(r, "special_token_table"));

  // Regex: ASCII with its NUL counted in regex_size.
  const uint64_t regex_at = r.file_offset();
  if (t.regex_size == 0) throw_format_error(name, "tokenizer_header.regex_size", 0x8C, "must be >= 1 (the NUL terminator)");
  if (t.regex_size > r.remaining())
    throw_format_error(name, "regex", regex_at,
                       "tokenizer_header.regex_size = " + std::to_string(t.regex_size) + " runs past the end of the file (" +
                           std::to_string(file_size) + " bytes)");
  const auto regex = r.bytes(t.regex_size, "regex");
  if (regex.back() != 0)
    throw_format_error(name, "regex", regex_at + t.regex_size - 1,
                       "is not NUL-terminated: its last byte (regex_size = " + std::to_string(t.regex_size) + ") is " +
                           hex_bytes(regex.last(1)));
  const auto nul = std::find(regex.begin(), regex.end(), uint8_t{0});
  if (nul != regex.end() - 1)
    throw_format_error(name, "regex", regex_at + static_cast<uint64_t>(nul - regex.begin()),
                       "contains a NUL before its end (regex_size = " + std::to_string(t.regex_size) + ")");
  f.regex_ = {reinterpret_cast<const char*>(regex.data()), regex.size() - 1};

  // Text tokens: u16 length + bytes each; every length is checked against the section.
  const uint64_t tokens_at = r.file_offset();
  if (t.tokens_size > r.remaining())
    throw_format_error(name, "text_tokens", tokens_at,
                       "tokenizer_header.tokens_size = " + std::to_string(t.tokens_size) +
                           " runs past the end of the file (" + std::to_string(file_size) + " bytes): truncated tokenizer");
  if (uint64_t{t.num_text_tokens} * 2 > t.tokens_size)
    throw_format_error(name, "tokenizer_header.tokens_size", 0x90,
                       std::to_string(t.tokens_size) + " bytes cannot hold " + std::to_string(t.num_text_tokens) +
                           " length-prefixed tokens");
  const auto section = r.bytes(t.tokens_size, "text_tokens");
  f.text_tokens_.reserve(t.num_text_tokens);
  uint64_t pos = 0;
  for (uint32_t id = 0; id < t.num_text_tokens; ++id) {
    if (section.size() - pos < 2)
      throw_format_error(name, "text token " + std::to_string(id) + " length", tokens_at + pos,
                         "the text-token section (tokens_size = " + std::to_string(t.tokens_size) +
                             ") ends inside this length prefix");
    const uint16_t length = load_u16(section.data() + pos);
    if (length > section.size() - pos - 2)
      throw_format_error(name, "text token " + std::to_string(id), tokens_at + pos,
                         "length " + std::to_string(length) + " runs past the end of the text-token section (which ends at byte " +
                             std::to_string(tokens_at + t.tokens_size) + ")");
    f.text_tokens_.emplace_back(reinterpret_cast<const char*>(section.data() + pos + 2), length);
    pos += 2u + length;
  }
  if (pos != section.size())
    throw_format_error(name, "tokenizer_header.tokens_size", 0x90,
                       "says " + std::to_string(t.tokens_size) + " bytes but the " + std::to_string(t.num_text_tokens) +
                           " text tokens use " + std::to_string(pos));

  // Weights: every offset from the header, each checked against the file size.
  f.layout_ = compute_modelbin_layout_within(h, t, name, file_size);
  if (file_size > align_up(f.layout_.file_size, kPageAlignment))
    throw_format_error(name, "file size", f.layout_.file_size,
                       "the header describes " + std::to_string(f.layout_.file_size) + " bytes but the file has " +
                           std::to_string(file_size) + ": unexpected trailing data");
  return f;
}

}  // namespace gptoss::modelbin

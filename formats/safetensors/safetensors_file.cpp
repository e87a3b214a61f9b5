#include "formats/safetensors/safetensors_file.h"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "formats/core/checked_math.h"
#include "formats/core/error.h"
#include "formats/core/json_value.h"

namespace gptoss {
namespace {
using json = nlohmann::json;

std::vector<uint64_t> read_uint_array(const JsonValue& value) {
  if (!value.is_array()) value.fail("must be an array of non-negative integers, found " + describe_json_value(value.raw()));
  std::vector<uint64_t> out;
  out.reserve(value.size());
  for (const JsonValue& v : value.elements()) {
    const auto n = JsonValue::uint_within(v.raw(), UINT64_MAX);
    if (!n) value.fail("must hold non-negative integers, found " + describe_json_value(v.raw()));
    out.push_back(*n);
  }
  return out;
}
// Well-formed UTF-8 as JSON text must be: no overlong forms, no surrogates, nothing past U+10FFFF.
bool is_utf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<uint8_t>(text[i]);
    size_t extra = 0;
    uint32_t lo = 0x80, hi = 0xBF;  // the range of the second byte
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      extra = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      extra = 2;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      extra = 3;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return false;
    }
    if (text.size() - i <= extra) return false;
    for (size_t k = 1; k <= extra; ++k) {
      const auto b = static_cast<uint8_t>(text[i + k]);
      if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return false;
    }
    i += extra + 1;
  }
  return true;
}
}  // namespace

std::optional<SafetensorsHeaderError> check_safetensors_header(std::vector<SafetensorsTensor>& tensors,
                                                               const std::map<std::string, std::string>& metadata,
                                                               uint64_t data_section_bytes) {
  auto broken = [](std::string field, std::string message, bool at_data_section = false) {
    return std::optional<SafetensorsHeaderError>({std::move(field), std::move(message), at_data_section});
  };
  // Ours (the reader's JSON parse cannot produce these; a writer could).
  for (const auto& [key, value] : metadata)
    if (!is_utf8(key) || !is_utf8(value))
      return broken("__metadata__", "metadata key or value " + json_quoted(key) + " is not valid UTF-8");
  std::set<std::string_view> names;
  for (const auto& t : tensors) {
    if (!is_utf8(t.name)) return broken("tensor name", "tensor name " + json_quoted(t.name) + " is not valid UTF-8");
    const std::string field = "tensor \"" + t.name + "\"";
    if (t.name == "__metadata__")
      return broken(field, "the name __metadata__ is the key of the header's metadata; no tensor can have it");
    if (!names.insert(t.name).second) return broken(field, "duplicate key \"" + t.name + "\"");
    if (dtype_info(t.dtype).safetensors_name.empty())
      return broken(field + ".dtype", "dtype " + std::string(dtype_name(t.dtype)) + " has no safetensors name");
  }
  // Rules 8-12: sort by offsets; contiguous from 0; sizes agree with dtype x shape.
  std::stable_sort(tensors.begin(), tensors.end(), [](const auto& a, const auto& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t expected = 0;
  for (const auto& t : tensors) {
    const std::string field = "tensor \"" + t.name + "\"";
    if (t.begin != expected || t.end < t.begin)
      return broken(field + ".data_offsets", "offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                                                 "] must start at " + std::to_string(expected) +
                                                 " (no gaps or overlaps)");
    expected = t.end;
    auto numel = checked_product(t.shape);
    if (!numel) return broken(field + ".shape", "element count overflows 64 bits");
    const auto& info = dtype_info(t.dtype);
    auto bits = checked_mul(*numel, static_cast<uint64_t>(info.block_bytes) * 8);
    if (!bits) return broken(field + ".shape", "size in bits overflows 64 bits");
    auto bytes = dtype_byte_size(t.dtype, *numel);
    if (!bytes)
      return broken(field + ".shape", std::to_string(*numel) + " elements of " + std::string(info.name) +
                                          " are not a whole number of bytes");
    if (t.end - t.begin != *bytes)
      return broken(field + ".data_offsets", "holds " + std::to_string(t.end - t.begin) + " bytes but " +
                                                 std::string(info.name) + " " + "of this shape needs " +
                                                 std::to_string(*bytes));
  }
  // Rule 13: the data section is covered exactly.
  if (expected != data_section_bytes)
    return broken("data section",
                  "tensors cover " + std::to_string(expected) + " bytes but the data section has " +
                      std::to_string(data_section_bytes) + " (truncated file or trailing bytes)",
                  true);
  return std::nullopt;
}

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path) { return parse(MappedFile::open(path)); }

SafetensorsFile SafetensorsFile::parse(std::shared_ptr<const MappedFile> mapped) {
  SafetensorsFile st;
  st.file_ = std::move(mapped);
  const std::string& file = st.file_->path();
  const uint64_t file_size = st.file_->size();

  // Rules 1-3: header length.
  if (file_size < 8) throw_format_error(file, "header length", 0, "file is shorter than the 8-byte header length");
  const uint64_t n = load_u64(st.file_->bytes().data());
  if (n > kMaxHeaderSize)
    throw_format_error(file, "header length", 0,
                       "header of " + std::to_string(n) + " bytes exceeds the 100000000-byte limit");
  if (n > file_size - 8)
    throw_format_error(file, "header length", 0,
                       "header of " + std::to_string(n) + " bytes runs past the end of the file (" +
                           std::to_string(file_size) + " bytes)");
  st.header_size_ = n;
  auto header = st.file_->slice(8, n, "header");
  const std::string_view text(reinterpret_cast<const char*>(header.data()), header.size());

  // Rule 4: UTF-8 without BOM (nlohmann would skip a BOM silently; the official reader rejects it).
  if (text.size() >= 3 && static_cast<uint8_t>(text[0]) == 0xEF && static_cast<uint8_t>(text[1]) == 0xBB &&
      static_cast<uint8_t>(text[2]) == 0xBF)
    throw_format_error(file, "header", 8, "header starts with a UTF-8 byte-order mark, which is not JSON");

  // Raw NUL can never appear in JSON text; the official reader fails NUL padding as trailing
  // characters, and we must not let a parser treat it as the end of input.
  if (auto nul = text.find('\0'); nul != std::string_view::npos)
    throw_format_error(file, "header", 8 + nul, "invalid JSON: NUL byte in the header (NUL padding is not allowed)");

  // Rule 5 and our extra rule: parse, catching duplicate keys at the top level and in __metadata__.
  std::set<std::string> top_keys;
  std::set<std::string> meta_keys;
  std::string duplicate;
  bool in_metadata = false;
  auto callback = [&](int depth, json::parse_event_t event, json& parsed) -> bool {
    if (event == json::parse_event_t::key) {
      const std::string key = parsed.get<std::string>();
      if (depth == 1) {
        if (!top_keys.insert(key).second && duplicate.empty()) duplicate = key;
        in_metadata = key == "__metadata__";
      } else if (depth == 2 && in_metadata) {
        if (!meta_keys.insert(key).second && duplicate.empty()) duplicate = "__metadata__." + key;
      }
    }
    return true;
  };
  json root;
  try {
    root = json::parse(text.begin(), text.end(), callback);
  } catch (const json::parse_error& e) {
    throw_format_error(file, "header", 8 + std::min<uint64_t>(e.byte > 0 ? e.byte - 1 : 0, n),
                       std::string("invalid JSON: ") + e.what());
  } catch (const json::exception& e) {  // e.g. out_of_range 406: a number too large for a double
    throw_format_error(file, "header", 8, std::string("invalid JSON: ") + e.what());
  }
  const JsonValue header_json(root, file, 8, "header");
  if (!root.is_object()) header_json.fail("top level of the header must be a JSON object");
  if (!duplicate.empty()) header_json.fail("duplicate key \"" + duplicate + "\"");

  // Rule 6 (and the metadata rule): field types.
  for (const auto& [name, value] : header_json.members()) {
    if (name == "__metadata__") {
      const JsonValue metadata = value.named("__metadata__");
      if (metadata.is_null()) continue;
      if (!metadata.is_object()) metadata.fail("must be an object of strings, found " + describe_json_value(metadata.raw()));
      for (const auto& [key, item] : metadata.members()) {
        if (!item.is_string()) item.fail("value must be a string, found " + describe_json_value(item.raw()));
        st.metadata_[std::string(key)] = item.as_string();
      }
      continue;
    }
    const JsonValue entry = value.named("tensor \"" + std::string(name) + "\"");
    if (!entry.is_object()) entry.fail("entry must be an object, found " + describe_json_value(entry.raw()));
    for (const char* required : {"dtype", "shape", "data_offsets"})
      if (!entry.has(required)) entry.fail(std::string("missing field \"") + required + "\"");
    const JsonValue dtype_value = entry.at("dtype");
    auto dtype = dtype_from_safetensors_name(dtype_value.as_string());
    if (!dtype) dtype_value.fail("unknown dtype " + json_quoted(dtype_value.as_string()));
    SafetensorsTensor t;
    t.name = name;
    t.dtype = *dtype;
    t.shape = read_uint_array(entry.at("shape"));
    const JsonValue offsets_value = entry.at("data_offsets");
    auto offsets = read_uint_array(offsets_value);
    if (offsets.size() != 2) offsets_value.fail("must hold exactly 2 integers");
    t.begin = offsets[0];
    t.end = offsets[1];
    st.tensors_.push_back(std::move(t));
  }

  // Rules 8-13: sorted by offsets, contiguous from 0, sizes agree with dtype x shape, the data
  // section covered exactly.
  if (const auto broken = check_safetensors_header(st.tensors_, st.metadata_, file_size - 8 - n))
    throw_format_error(file, broken->field, broken->at_data_section ? 8 + n : 8, broken->message);
  for (size_t i = 0; i < st.tensors_.size(); ++i) st.index_.emplace(st.tensors_[i].name, i);
  return st;
}

const SafetensorsTensor* SafetensorsFile::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

std::span<const uint8_t> SafetensorsFile::data(const SafetensorsTensor& t) const {
  return file_->slice(data_offset() + t.begin, t.size(), t.name);
}

std::vector<StoredTensorRange> SafetensorsFile::stored_tensors() const {
  std::vector<StoredTensorRange> out;
  for (const auto& t : tensors_) out.push_back({t.name, data_offset() + t.begin, t.size()});
  return out;
}

}  // namespace gptoss

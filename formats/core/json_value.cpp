#include "formats/core/json_value.h"

#include <bit>

#include <nlohmann/json.hpp>

#include "formats/core/error.h"

namespace gptoss {
namespace {
using json = nlohmann::json;

// "a non-negative integer below 2^32" for the full ranges, "an integer from 0 to 7" otherwise.
std::string integer_range(uint64_t max) {
  if (max != 0 && std::has_single_bit(max + 1))
    return "a non-negative integer below 2^" + std::to_string(std::countr_zero(max + 1));
  if (max == UINT64_MAX) return "a non-negative integer below 2^64";
  return "an integer from 0 to " + std::to_string(max);
}
}  // namespace

std::string json_quoted(std::string_view text) {
  constexpr size_t kQuotedBytes = 40;
  // Bytes cut in the middle of a UTF-8 sequence print as U+FFFD instead of throwing.
  std::string out = json(std::string(text.substr(0, kQuotedBytes))).dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > kQuotedBytes) out.insert(out.size() - 1, "...");
  return out;
}

std::string describe_json_value(const json& value) {
  switch (value.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return value.get<bool>() ? "true" : "false";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float: return "the number " + value.dump();
    case json::value_t::string: return "the string " + json_quoted(value.get_ref<const std::string&>());
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::binary: return "binary data";
    case json::value_t::discarded: return "a discarded value";
  }
  return "an unknown value";
}

JsonValue::JsonValue(const json& value, std::string file, std::optional<uint64_t> offset, std::string path)
    : value_(&value), origin_(std::make_shared<const Origin>(Origin{std::move(file), offset})), path_(std::move(path)) {}

JsonValue::JsonValue(const json& value, std::shared_ptr<const Origin> origin, std::string path)
    : value_(&value), origin_(std::move(origin)), path_(std::move(path)) {}

JsonValue JsonValue::child(const json& value, std::string_view key) const {
  std::string path = path_;
  if (!path.empty()) path += '.';
  path += key;
  return JsonValue(value, origin_, std::move(path));
}

JsonValue JsonValue::child(const json& value, size_t index) const {
  return JsonValue(value, origin_, path_ + "[" + std::to_string(index) + "]");
}

JsonValue JsonValue::named(std::string path) const { return JsonValue(*value_, origin_, std::move(path)); }

bool JsonValue::is_null() const { return value_->is_null(); }
bool JsonValue::is_object() const { return value_->is_object(); }
bool JsonValue::is_array() const { return value_->is_array(); }
bool JsonValue::is_string() const { return value_->is_string(); }
bool JsonValue::is_bool() const { return value_->is_boolean(); }
bool JsonValue::is_number() const { return value_->is_number(); }

void JsonValue::fail(const std::string& message) const {
  throw_format_error(origin_->file, path_, origin_->offset, message);
}

void JsonValue::fail_expected(const std::string& what) const {
  fail("expected " + what + ", found " + describe_json_value(*value_));
}

void JsonValue::require_object() const {
  if (!value_->is_object()) fail_expected("an object");
}

bool JsonValue::has(std::string_view key) const { return find(key).has_value(); }

std::optional<JsonValue> JsonValue::find(std::string_view key) const {
  require_object();
  const auto it = value_->find(key);
  if (it == value_->end() || it->is_null()) return std::nullopt;
  return child(*it, key);
}

JsonValue JsonValue::at(std::string_view key) const {
  require_object();
  const auto it = value_->find(key);
  if (it == value_->end()) child(*value_, key).fail("required field is missing");
  return child(*it, key);
}

std::vector<JsonValue::Member> JsonValue::members() const {
  require_object();
  std::vector<Member> out;
  out.reserve(value_->size());
  for (auto it = value_->begin(); it != value_->end(); ++it) {
    const std::string& key = it.key();
    out.push_back({key, child(it.value(), key)});
  }
  return out;
}

std::vector<JsonValue> JsonValue::elements() const {
  if (!value_->is_array()) fail_expected("an array");
  std::vector<JsonValue> out;
  out.reserve(value_->size());
  for (size_t i = 0; i < value_->size(); ++i) out.push_back(child((*value_)[i], i));
  return out;
}

size_t JsonValue::size() const {
  if (!value_->is_array() && !value_->is_object()) fail_expected("an array or an object");
  return value_->size();
}

const std::string& JsonValue::as_string() const {
  if (!value_->is_string()) fail_expected("a string");
  return value_->get_ref<const std::string&>();
}

bool JsonValue::as_bool() const {
  if (!value_->is_boolean()) fail_expected("true or false");
  return value_->get<bool>();
}

double JsonValue::as_number() const {
  if (!value_->is_number()) fail_expected("a number");
  return value_->get<double>();
}

std::optional<uint64_t> JsonValue::uint_within(const json& value, uint64_t max) {
  // The parser stores every non-negative integer as unsigned; a document built in code may hold
  // a signed one.
  uint64_t v = 0;
  if (value.is_number_unsigned()) v = value.get<uint64_t>();
  else if (value.is_number_integer() && value.get<int64_t>() >= 0) v = static_cast<uint64_t>(value.get<int64_t>());
  else return std::nullopt;
  if (v > max) return std::nullopt;
  return v;
}

uint64_t JsonValue::as_uint(uint64_t max) const {
  const auto v = uint_within(*value_, max);
  if (!v) fail_expected(integer_range(max));
  return *v;
}

uint32_t JsonValue::as_u32() const { return static_cast<uint32_t>(as_uint(UINT32_MAX)); }

template <>
std::string JsonValue::get<std::string>(std::string_view key) const {
  return at(key).as_string();
}
template <>
bool JsonValue::get<bool>(std::string_view key) const {
  return at(key).as_bool();
}
template <>
double JsonValue::get<double>(std::string_view key) const {
  return at(key).as_number();
}
template <>
uint32_t JsonValue::get<uint32_t>(std::string_view key) const {
  return at(key).as_u32();
}

template <>
std::string JsonValue::get_or<std::string>(std::string_view key, std::string fallback) const {
  const auto v = find(key);
  return v ? v->as_string() : fallback;
}
template <>
bool JsonValue::get_or<bool>(std::string_view key, bool fallback) const {
  const auto v = find(key);
  return v ? v->as_bool() : fallback;
}
template <>
double JsonValue::get_or<double>(std::string_view key, double fallback) const {
  const auto v = find(key);
  return v ? v->as_number() : fallback;
}
template <>
uint32_t JsonValue::get_or<uint32_t>(std::string_view key, uint32_t fallback) const {
  const auto v = find(key);
  return v ? v->as_u32() : fallback;
}

}  // namespace gptoss

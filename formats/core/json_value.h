#pragma once
// The one way readers take values out of a parsed JSON document (config.json, tokenizer.json,
// tokenizer_config.json, generation_config.json, model.safetensors.index.json, safetensors
// headers, the headers of gptoss-run's trace and gptoss-eval's reference logits files). Every read checks the value's JSON type, and an integer's range, and otherwise throws
// FormatError naming the file and the field path:
//   config.json: rope_scaling.rope_type: expected a string, found the number 0
// nlohmann's own get<T>() would throw a type_error that names neither, so readers do not call it.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace gptoss {

// What a value is, for messages: "the number 0", "the string \"yarn\"", "true", "null", "an array",
// "an object". Long strings are cut after 40 bytes.
std::string describe_json_value(const nlohmann::json& value);
// `text` as a JSON string literal for a message, cut after 40 bytes ("\"abc...\"").
std::string json_quoted(std::string_view text);

class JsonValue {
 public:
  // A document's root (or any value when `path` is given): `file` names it in errors, with
  // `offset` when the JSON sits at that byte of a binary file (a safetensors header). The
  // document must outlive every JsonValue taken from it.
  JsonValue(const nlohmann::json& value, std::string file, std::optional<uint64_t> offset = std::nullopt,
            std::string path = {});

  const std::string& file() const { return origin_->file; }
  const std::string& path() const { return path_; }  // "rope_scaling.rope_type", "added_tokens[3].id"; "" at the root
  const nlohmann::json& raw() const { return *value_; }
  // The same value under another name in messages (a reader whose fields have their own names:
  // `tensor "x"` in a safetensors header).
  JsonValue named(std::string path) const;

  bool is_null() const;
  bool is_object() const;
  bool is_array() const;
  bool is_string() const;
  bool is_bool() const;
  bool is_number() const;

  // Object members; each fails with "expected an object" when this value is not one. JSON writers
  // put null for "not set", so `find` treats a null member as absent; `at` returns it (and a read
  // of it then says "found null").
  bool has(std::string_view key) const;
  std::optional<JsonValue> find(std::string_view key) const;
  JsonValue at(std::string_view key) const;  // "required field is missing" when absent

  struct Member;
  std::vector<Member> members() const;     // sorted by key, as nlohmann::json keeps objects
  std::vector<JsonValue> elements() const;  // "expected an array" unless this is one
  size_t size() const;                      // members or elements; "expected an array or an object" otherwise

  // Typed reads: "expected a string, found the number 0".
  const std::string& as_string() const;
  bool as_bool() const;
  double as_number() const;                   // any JSON number (integers too)
  uint64_t as_uint(uint64_t max) const;       // an integer in [0, max]; 24.0 and 1e3 are not integers
  uint32_t as_u32() const;                    // as_uint(2^32 - 1)

  // Member reads: at(key).as_...(), or the fallback when the member is absent or null.
  template <typename T>
  T get(std::string_view key) const;
  template <typename T>
  T get_or(std::string_view key, T fallback) const;

  // Throws FormatError(file, path, message); `expected` says "expected <what>, found <this value>".
  [[noreturn]] void fail(const std::string& message) const;
  [[noreturn]] void fail_expected(const std::string& what) const;

  // The check behind as_uint without a JsonValue, for loops over hundreds of thousands of values
  // (a tokenizer's vocabulary): nullopt when `value` is not an integer in [0, max].
  static std::optional<uint64_t> uint_within(const nlohmann::json& value, uint64_t max);

 private:
  struct Origin {
    std::string file;
    std::optional<uint64_t> offset;
  };
  JsonValue(const nlohmann::json& value, std::shared_ptr<const Origin> origin, std::string path);
  JsonValue child(const nlohmann::json& value, std::string_view key) const;
  JsonValue child(const nlohmann::json& value, size_t index) const;
  void require_object() const;

  const nlohmann::json* value_;
  std::shared_ptr<const Origin> origin_;
  std::string path_;
};

struct JsonValue::Member {
  std::string_view key;  // points into the document
  JsonValue value;
};

template <>
std::string JsonValue::get<std::string>(std::string_view key) const;
template <>
bool JsonValue::get<bool>(std::string_view key) const;
template <>
double JsonValue::get<double>(std::string_view key) const;
template <>
uint32_t JsonValue::get<uint32_t>(std::string_view key) const;
template <>
std::string JsonValue::get_or<std::string>(std::string_view key, std::string fallback) const;
template <>
bool JsonValue::get_or<bool>(std::string_view key, bool fallback) const;
template <>
double JsonValue::get_or<double>(std::string_view key, double fallback) const;
template <>
uint32_t JsonValue::get_or<uint32_t>(std::string_view key, uint32_t fallback) const;

}  // namespace gptoss

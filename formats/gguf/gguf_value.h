#pragma once
// GGUF metadata values: the 13 value types and a read-only view of one value as it lies in the
// file (strings and arrays point into the mapped file; the GgufFile that made them keeps it alive).
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gptoss {

enum class GgufType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, Bool = 7,
  String = 8, Array = 9, U64 = 10, I64 = 11, F64 = 12,
};
inline constexpr uint32_t kGgufTypeCount = 13;

std::string_view gguf_type_name(GgufType type);  // "UINT32", "ARRAY", ...
// Bytes of one value of a fixed-size type; 0 for String and Array.
uint32_t gguf_fixed_size(GgufType type);

struct GgufValue {
  GgufType type = GgufType::U8;
  uint64_t bits = 0;        // fixed-size scalars: the little-endian bytes, zero-extended
  std::string_view string;  // String
  // Array
  GgufType element_type = GgufType::U8;
  uint64_t count = 0;
  std::span<const uint8_t> raw;            // fixed-size elements, packed little-endian
  std::vector<std::string_view> strings;   // String elements

  bool is_array_of(GgufType element) const { return type == GgufType::Array && element_type == element; }
  // Numeric scalar as a number (integers exactly, floats widened); nullopt for strings and arrays.
  std::optional<double> as_number() const;
  // Element i of a fixed-size array, as the raw bits of that element.
  uint64_t element_bits(uint64_t i) const;
  // A short human-readable rendering (arrays as "[N x TYPE]").
  std::string to_string() const;
};

}  // namespace gptoss

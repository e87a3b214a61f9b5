#include "formats/gguf/gguf_value.h"

#include <bit>
#include <cstring>

#include "formats/core/mapped_file.h"

static_assert(std::endian::native == std::endian::little, "GGUF values are read in host byte order");

namespace gptoss {

std::string_view gguf_type_name(GgufType type) {
  switch (type) {
    case GgufType::U8: return "UINT8";
    case GgufType::I8: return "INT8";
    case GgufType::U16: return "UINT16";
    case GgufType::I16: return "INT16";
    case GgufType::U32: return "UINT32";
    case GgufType::I32: return "INT32";
    case GgufType::F32: return "FLOAT32";
    case GgufType::Bool: return "BOOL";
    case GgufType::String: return "STRING";
    case GgufType::Array: return "ARRAY";
    case GgufType::U64: return "UINT64";
    case GgufType::I64: return "INT64";
    case GgufType::F64: return "FLOAT64";
  }
  return "?";
}

uint32_t gguf_fixed_size(GgufType type) {
  switch (type) {
    case GgufType::U8: case GgufType::I8: case GgufType::Bool: return 1;
    case GgufType::U16: case GgufType::I16: return 2;
    case GgufType::U32: case GgufType::I32: case GgufType::F32: return 4;
    case GgufType::U64: case GgufType::I64: case GgufType::F64: return 8;
    case GgufType::String: case GgufType::Array: return 0;
  }
  return 0;
}

namespace {
double number_from_bits(GgufType type, uint64_t bits) {
  switch (type) {
    case GgufType::U8: case GgufType::U16: case GgufType::U32: case GgufType::U64: return static_cast<double>(bits);
    case GgufType::Bool: return bits != 0 ? 1.0 : 0.0;
    case GgufType::I8: return static_cast<int8_t>(bits);
    case GgufType::I16: return static_cast<int16_t>(bits);
    case GgufType::I32: return static_cast<int32_t>(bits);
    case GgufType::I64: return static_cast<double>(static_cast<int64_t>(bits));
    case GgufType::F32: return std::bit_cast<float>(static_cast<uint32_t>(bits));
    case GgufType::F64: return std::bit_cast<double>(bits);
    default: return 0;
  }
}
}  // namespace

std::optional<double> GgufValue::as_number() const {
  if (gguf_fixed_size(type) == 0) return std::nullopt;
  return number_from_bits(type, bits);
}

uint64_t GgufValue::element_bits(uint64_t i) const {
  const uint32_t size = gguf_fixed_size(element_type);
  uint64_t out = 0;
  std::memcpy(&out, raw.data() + i * size, size);  // GGUF is little-endian, as is every host we build for
  return out;
}

std::string GgufValue::to_string() const {
  if (type == GgufType::String) return "\"" + std::string(string) + "\"";
  if (type == GgufType::Array) return "[" + std::to_string(count) + " x " + std::string(gguf_type_name(element_type)) + "]";
  const double v = number_from_bits(type, bits);
  if (type == GgufType::F32 || type == GgufType::F64) return std::to_string(v);
  if (type == GgufType::I64) return std::to_string(static_cast<int64_t>(bits));
  if (type == GgufType::U64) return std::to_string(bits);
  return std::to_string(static_cast<int64_t>(v));
}

}  // namespace gptoss

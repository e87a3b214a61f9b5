#include "formats/core/dtype.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "formats/core/checked_math.h"

namespace gptoss {
namespace {
// Order matches the DType enum.
constexpr std::array<DTypeInfo, kDTypeCount> kTable = {{
    {DType::F64, "F64", "F64", 28, 1, 8, true},
    {DType::F32, "F32", "F32", 0, 1, 4, true},
    {DType::F16, "F16", "F16", 1, 1, 2, true},
    {DType::BF16, "BF16", "BF16", 30, 1, 2, true},
    {DType::I64, "I64", "I64", 27, 1, 8, false},
    {DType::I32, "I32", "I32", 26, 1, 4, false},
    {DType::I16, "I16", "I16", 25, 1, 2, false},
    {DType::I8, "I8", "I8", 24, 1, 1, false},
    {DType::U64, "U64", "U64", -1, 1, 8, false},
    {DType::U32, "U32", "U32", -1, 1, 4, false},
    {DType::U16, "U16", "U16", -1, 1, 2, false},
    {DType::U8, "U8", "U8", -1, 1, 1, false},
    {DType::BOOL, "BOOL", "BOOL", -1, 1, 1, false},
    {DType::F8_E4M3, "F8_E4M3", "F8_E4M3", -1, 1, 1, true},
    {DType::F8_E5M2, "F8_E5M2", "F8_E5M2", -1, 1, 1, true},
    {DType::E8M0, "E8M0", "F8_E8M0", -1, 1, 1, false},
    {DType::F8_E4M3FNUZ, "F8_E4M3FNUZ", "F8_E4M3FNUZ", -1, 1, 1, false},
    {DType::F8_E5M2FNUZ, "F8_E5M2FNUZ", "F8_E5M2FNUZ", -1, 1, 1, false},
    {DType::F4, "F4", "F4", -1, 2, 1, false},
    {DType::F6_E2M3, "F6_E2M3", "F6_E2M3", -1, 4, 3, false},
    {DType::F6_E3M2, "F6_E3M2", "F6_E3M2", -1, 4, 3, false},
    {DType::C64, "C64", "C64", -1, 1, 8, false},
    {DType::Q8_0, "Q8_0", "", 8, kQ8_0BlockElements, kQ8_0BlockBytes, true},
    {DType::MXFP4, "MXFP4", "", 39, kMxfp4BlockElements, kMxfp4GgmlBlockBytes, true},
}};

bool iequal(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return std::toupper(x) == std::toupper(y); });
}
}  // namespace

const DTypeInfo& dtype_info(DType type) { return kTable[static_cast<size_t>(type)]; }

std::optional<DType> dtype_from_safetensors_name(std::string_view name) {
  for (const auto& info : kTable)
    if (!info.safetensors_name.empty() && info.safetensors_name == name) return info.type;  // case-sensitive
  return std::nullopt;
}

std::optional<DType> dtype_from_ggml_type(uint32_t ggml_type) {
  for (const auto& info : kTable)
    if (info.ggml_type >= 0 && static_cast<uint32_t>(info.ggml_type) == ggml_type) return info.type;
  return std::nullopt;
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& info : kTable)
    if (iequal(info.name, name)) return info.type;
  return std::nullopt;
}

std::optional<uint64_t> dtype_byte_size(DType type, uint64_t elements) {
  const auto& info = dtype_info(type);
  if (elements % info.block_elements != 0) return std::nullopt;
  return checked_mul(elements / info.block_elements, info.block_bytes);
}

std::optional<Mxfp4PairBytes> mxfp4_pair_byte_size(uint64_t elements) {
  if (elements % kMxfp4BlockElements != 0) return std::nullopt;
  const uint64_t blocks = elements / kMxfp4BlockElements;
  return Mxfp4PairBytes{blocks * kMxfp4OaiBlockBytes, blocks};  // at most elements / 2: no overflow
}

}  // namespace gptoss

#include "formats/core/dtype.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "formats/codecs/float_codec.h"
#include "formats/codecs/ggml_quants.h"
#include "formats/codecs/mxfp4.h"
#include "formats/codecs/q8_0.h"
#include "formats/core/checked_math.h"

namespace gptoss {
namespace {
namespace q = ggml_quants;
// Order matches the DType enum. The ggml ids are ggml's enum ggml_type; the block shapes of the
// quantized types are stated once, beside their decoders and quantizers (formats/codecs).
constexpr std::array<DTypeInfo, kDTypeCount> kTable = {{
    {DType::F64, "F64", "F64", 28, 1, 8, true, decode_f64_values},
    {DType::F32, "F32", "F32", 0, 1, 4, true, decode_f32_values},
    {DType::F16, "F16", "F16", 1, 1, 2, true, decode_f16_values},
    {DType::BF16, "BF16", "BF16", 30, 1, 2, true, decode_bf16_values},
    {DType::I64, "I64", "I64", 27, 1, 8, false, nullptr},
    {DType::I32, "I32", "I32", 26, 1, 4, false, nullptr},
    {DType::I16, "I16", "I16", 25, 1, 2, false, nullptr},
    {DType::I8, "I8", "I8", 24, 1, 1, false, nullptr},
    {DType::U64, "U64", "U64", -1, 1, 8, false, nullptr},
    {DType::U32, "U32", "U32", -1, 1, 4, false, nullptr},
    {DType::U16, "U16", "U16", -1, 1, 2, false, nullptr},
    {DType::U8, "U8", "U8", -1, 1, 1, false, nullptr},
    {DType::BOOL, "BOOL", "BOOL", -1, 1, 1, false, nullptr},
    {DType::F8_E4M3, "F8_E4M3", "F8_E4M3", -1, 1, 1, true, nullptr},
    {DType::F8_E5M2, "F8_E5M2", "F8_E5M2", -1, 1, 1, true, nullptr},
    {DType::E8M0, "E8M0", "F8_E8M0", -1, 1, 1, false, nullptr},
    {DType::F8_E4M3FNUZ, "F8_E4M3FNUZ", "F8_E4M3FNUZ", -1, 1, 1, false, nullptr},
    {DType::F8_E5M2FNUZ, "F8_E5M2FNUZ", "F8_E5M2FNUZ", -1, 1, 1, false, nullptr},
    {DType::F4, "F4", "F4", -1, 2, 1, false, nullptr},
    {DType::F6_E2M3, "F6_E2M3", "F6_E2M3", -1, 4, 3, false, nullptr},
    {DType::F6_E3M2, "F6_E3M2", "F6_E3M2", -1, 4, 3, false, nullptr},
    {DType::C64, "C64", "C64", -1, 1, 8, false, nullptr},
    {DType::Q8_0, "Q8_0", "", 8, kQ8_0BlockElements, kQ8_0BlockBytes, true, q8_0::dequantize, q8_0::quantize},
    {DType::MXFP4, "MXFP4", "", 39, kMxfp4BlockElements, kMxfp4GgmlBlockBytes, true, mxfp4::dequantize_ggml, mxfp4::quantize_ggml},
    {DType::Q4_0, "Q4_0", "", 2, q::kQ4_0.elements, q::kQ4_0.bytes, true, q::dequantize_q4_0, q::quantize_q4_0},
    {DType::Q4_1, "Q4_1", "", 3, q::kQ4_1.elements, q::kQ4_1.bytes, true, q::dequantize_q4_1, q::quantize_q4_1},
    {DType::Q5_0, "Q5_0", "", 6, q::kQ5_0.elements, q::kQ5_0.bytes, true, q::dequantize_q5_0, q::quantize_q5_0},
    {DType::Q5_1, "Q5_1", "", 7, q::kQ5_1.elements, q::kQ5_1.bytes, true, q::dequantize_q5_1, q::quantize_q5_1},
    {DType::IQ4_NL, "IQ4_NL", "", 20, q::kIq4Nl.elements, q::kIq4Nl.bytes, true, q::dequantize_iq4_nl},
    {DType::Q2_K, "Q2_K", "", 10, q::kQ2_K.elements, q::kQ2_K.bytes, true, q::dequantize_q2_k},
    {DType::Q3_K, "Q3_K", "", 11, q::kQ3_K.elements, q::kQ3_K.bytes, true, q::dequantize_q3_k},
    {DType::Q4_K, "Q4_K", "", 12, q::kQ4_K.elements, q::kQ4_K.bytes, true, q::dequantize_q4_k, q::quantize_q4_k},
    {DType::Q5_K, "Q5_K", "", 13, q::kQ5_K.elements, q::kQ5_K.bytes, true, q::dequantize_q5_k, q::quantize_q5_k},
    {DType::Q6_K, "Q6_K", "", 14, q::kQ6_K.elements, q::kQ6_K.bytes, true, q::dequantize_q6_k, q::quantize_q6_k},
    {DType::IQ4_XS, "IQ4_XS", "", 23, q::kIq4Xs.elements, q::kIq4Xs.bytes, true, q::dequantize_iq4_xs},
    {DType::IQ3_S, "IQ3_S", "", 21, q::kIq3S.elements, q::kIq3S.bytes, true, q::dequantize_iq3_s},
    {DType::IQ3_XXS, "IQ3_XXS", "", 18, q::kIq3Xxs.elements, q::kIq3Xxs.bytes, true, q::dequantize_iq3_xxs},
    {DType::IQ2_S, "IQ2_S", "", 22, q::kIq2S.elements, q::kIq2S.bytes, true, q::dequantize_iq2_s},
    {DType::IQ2_XS, "IQ2_XS", "", 17, q::kIq2Xs.elements, q::kIq2Xs.bytes, true, q::dequantize_iq2_xs},
    {DType::IQ2_XXS, "IQ2_XXS", "", 16, q::kIq2Xxs.elements, q::kIq2Xxs.bytes, true, q::dequantize_iq2_xxs},
    {DType::IQ1_S, "IQ1_S", "", 19, q::kIq1S.elements, q::kIq1S.bytes, true, q::dequantize_iq1_s},
    {DType::IQ1_M, "IQ1_M", "", 29, q::kIq1M.elements, q::kIq1M.bytes, true, q::dequantize_iq1_m},
    {DType::Q8_1, "Q8_1", "", 9, q::kQ8_1.elements, q::kQ8_1.bytes, true, nullptr},
    {DType::Q8_K, "Q8_K", "", 15, q::kQ8_K.elements, q::kQ8_K.bytes, true, nullptr},
    {DType::TQ1_0, "TQ1_0", "", 34, q::kTq1_0.elements, q::kTq1_0.bytes, true, nullptr},
    {DType::TQ2_0, "TQ2_0", "", 35, q::kTq2_0.elements, q::kTq2_0.bytes, true, nullptr},
}};
static_assert([] {
  for (size_t i = 0; i < kTable.size(); ++i)
    if (static_cast<size_t>(kTable[i].type) != i) return false;
  return true;
}(), "kTable must list the DTypes in enum order");

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

#include "verify/value_checks.h"

#include <cmath>
#include <filesystem>

#include "formats/core/error.h"
#include "formats/core/float16.h"
#include "formats/core/mapped_file.h"
#include "formats/core/parallel_for.h"
#include "verify/canonical_digest.h"
#include "verify/tensor_locations.h"

namespace gptoss {

namespace {

constexpr int kMxfp4NaNScale = 255;
constexpr int kModelBinScaleLimit = 242;   // model.bin stores scale + 14 in one byte
constexpr int kPlausibleMinScale = 90;     // 2^(90-127) = 2^-37
constexpr double kF16Max = 65504;
constexpr double kNormGainMax = 1000;
constexpr double kQ8_0ScaleMax = kF16Max / 127;  // a larger scale decodes to values beyond f16's range

void scan_q8_0_blocks(std::span<const uint8_t> encoded, uint64_t first_block, Q8_0ScaleStats& q) {
  for (uint64_t b = 0; b * kQ8_0BlockBytes < encoded.size(); ++b) {
    const uint8_t* block = encoded.data() + b * kQ8_0BlockBytes;
    const uint16_t bits = load_u16(block);
    const float d = f16_to_f32(bits);
    uint8_t any_bits = 0, minus_128_seen = 0;  // byte ORs: the compiler vectorizes them
    for (uint32_t k = 0; k < kQ8_0BlockElements; ++k) {
      any_bits |= block[2 + k];
      minus_128_seen |= static_cast<uint8_t>(block[2 + k] == 0x80);  // int8 -128
    }
    const bool any_quant = any_bits != 0, minus_128 = minus_128_seen != 0;
    const bool non_finite = !std::isfinite(d);
    const bool negative = !non_finite && (bits & 0x8000u);
    const bool zero_with_data = d == 0 && any_quant;
    q.non_finite += non_finite;
    q.negative += negative;
    q.zero_with_data += zero_with_data;
    q.minus_128 += minus_128;
    if ((non_finite || negative || zero_with_data || minus_128) && !q.first_bad_block) q.first_bad_block = first_block + b;
    const double magnitude = std::fabs(static_cast<double>(d));
    if (!non_finite && magnitude > 0) {
      q.min = q.min == 0 ? magnitude : std::min(q.min, magnitude);
      if (magnitude > q.max) {
        q.max = magnitude;
        q.first_max_block = first_block + b;
      }
    }
  }
  q.blocks += encoded.size() / kQ8_0BlockBytes;
}

void scan_values(std::span<const float> v, uint64_t first, TensorValueStats& s) {
  float chunk_max = 0;  // the hot loop stays branch-light; the position is found only when it grows
  for (size_t k = 0; k < v.size(); ++k) {
    if (std::isnan(v[k])) {
      if (!s.nan++) s.first_nan = first + k;
    } else if (std::isinf(v[k])) {
      if (!s.inf++) s.first_inf = first + k;
    } else {
      s.zeros += v[k] == 0.0f;
      chunk_max = std::max(chunk_max, std::fabs(v[k]));
    }
  }
  if (chunk_max > s.abs_max) {
    s.abs_max = chunk_max;
    for (size_t k = 0; k < v.size(); ++k)
      if (std::fabs(v[k]) == chunk_max) {
        s.abs_max_at = first + k;
        break;
      }
  }
}

void scan_scale_bytes(std::span<const uint8_t> chunk, uint64_t first, TensorValueStats& s) {
  for (size_t k = 0; k < chunk.size(); ++k) {
    const int b = chunk[k];
    if (s.scale_min < 0 || b < s.scale_min) {
      s.scale_min = b;
      s.scale_min_at = first + k;
    }
    if (b > s.scale_max) {
      s.scale_max = b;
      s.scale_max_at = first + k;
    }
  }
}

TensorValueStats tensor_stats(const CanonicalTensor& t) {
  TensorValueStats s;
  s.name = t.spec.name;
  s.dtype = std::string(dtype_name(t.dtype));
  const bool scales = t.spec.role == TensorRole::Mlp1Scales || t.spec.role == TensorRole::Mlp2Scales;
  try {
    if (holds_mxfp4(t)) {
      stream_source(*t.source, [&](std::span<const uint8_t> chunk) {
        if (scales) scan_scale_bytes(chunk, s.elements, s);
        s.elements += chunk.size();
      });
    } else {
      if (t.dtype == DType::Q8_0) s.q8_0.emplace();
      for_each_dense_chunk(t, [&](std::span<const uint8_t> encoded, std::span<const float> values, uint64_t first) {
        if (s.q8_0) scan_q8_0_blocks(encoded, first / kQ8_0BlockElements, *s.q8_0);
        scan_values(values, first, s);
        s.elements += values.size();
      });
    }
  } catch (const FormatError& e) {
    // Bytes the reader cannot turn into values are a finding about this tensor; a file that
    // shrank while being read is caught after the pass (verify_model) and stays unreadable.
    s.read_failure = Finding{Severity::Error, scales ? "mxfp4-scale" : "data", e.file(), e.field().empty() ? s.name : e.field(),
                             e.offset(), e.message(), "bytes the reader can decode"};
  }
  return s;
}

// Byte index of element k in a tensor's stored encoding: of its quant in Q8_0, of its block in
// the other block types (whose bits for one element are spread over the block).
uint64_t element_byte(DType dtype, uint64_t k) {
  if (dtype == DType::Q8_0) return k / kQ8_0BlockElements * kQ8_0BlockBytes + 2 + k % kQ8_0BlockElements;
  const auto& info = dtype_info(dtype);
  return k / info.block_elements * info.block_bytes;
}

std::string at_element(uint64_t k) { return " (first at element " + std::to_string(k) + ")"; }

void report_tensor(const CanonicalTensor& t, const TensorValueStats& s, const std::optional<TensorLocation>& where,
                   const std::string& model_file, Report& report) {
  const std::string file = where ? where->file : model_file;
  auto at = [&](uint64_t canonical_byte) -> std::optional<uint64_t> {
    if (!where) return std::nullopt;
    return where->byte(canonical_byte);
  };
  const std::optional<uint64_t> start = at(0);
  if (s.read_failure) report.add(*s.read_failure);
  if (s.nan)
    report.error("nan", file, s.name, std::to_string(s.nan) + " NaN values" + at_element(s.first_nan), "none",
                 at(element_byte(t.dtype, s.first_nan)));
  if (s.inf)
    report.error("inf", file, s.name, std::to_string(s.inf) + " infinite values" + at_element(s.first_inf), "none",
                 at(element_byte(t.dtype, s.first_inf)));
  if (!holds_mxfp4(t) && !s.read_failure && s.elements > 0 && s.zeros == s.elements)
    report.warning("zeros", file, s.name, "every one of " + std::to_string(s.elements) + " values is zero",
                   "at least one non-zero value (a trained tensor is never all zeros)", start);

  if (s.scale_max == kMxfp4NaNScale)
    report.error("mxfp4-scale", file, s.name, "scale byte 255 (NaN in the MX spec)" + at_element(s.scale_max_at), "< 255",
                 at(s.scale_max_at));
  else if (s.scale_max >= kModelBinScaleLimit)
    report.warning("mxfp4-scale", file, s.name, "scale byte " + std::to_string(s.scale_max) +
                   " cannot be stored in model.bin (+14 would wrap)" + at_element(s.scale_max_at), "< 242", at(s.scale_max_at));
  if (s.scale_min >= 0 && s.scale_min < kPlausibleMinScale)
    report.warning("mxfp4-scale", file, s.name, "scale byte " + std::to_string(s.scale_min) +
                   " gives weights below 2^-37, which a trained checkpoint never has" + at_element(s.scale_min_at), ">= 90",
                   at(s.scale_min_at));

  const bool norm = t.spec.role == TensorRole::AttnNorm || t.spec.role == TensorRole::MlpNorm ||
                    t.spec.role == TensorRole::FinalNorm;
  const auto abs_max_byte = at(element_byte(t.dtype, s.abs_max_at));
  if (norm && s.abs_max > kNormGainMax)
    report.warning("range", file, s.name, "norm gain abs max " + std::to_string(s.abs_max) + at_element(s.abs_max_at),
                   "< 1000", abs_max_byte);
  if (!norm && !holds_mxfp4(t) && s.abs_max > kF16Max)
    report.warning("range", file, s.name, "abs max " + std::to_string(s.abs_max) + " overflows f16" + at_element(s.abs_max_at),
                   "<= 65504", abs_max_byte);

  if (!s.q8_0) return;
  const auto& q = *s.q8_0;
  const auto block_at = [&](uint64_t b) { return at(b * kQ8_0BlockBytes); };
  const std::string first_bad = q.first_bad_block ? " (first bad block " + std::to_string(*q.first_bad_block) + ")" : "";
  const auto bad_at = q.first_bad_block ? block_at(*q.first_bad_block) : start;
  if (q.non_finite)
    report.error("q8_0-scale", file, s.name, std::to_string(q.non_finite) + " of " + std::to_string(q.blocks) +
                 " block scales are NaN or Inf" + first_bad, "finite scales (amax / 127)", bad_at);
  if (q.negative)
    report.warning("q8_0-scale", file, s.name, std::to_string(q.negative) + " block scales have the sign bit set" + first_bad,
                   "scales >= +0: quantizers write amax / 127", bad_at);
  if (q.zero_with_data)
    report.warning("q8_0-scale", file, s.name, std::to_string(q.zero_with_data) +
                   " blocks have scale 0 but non-zero quants (they decode to zeros)" + first_bad,
                   "scale 0 only for all-zero blocks", bad_at);
  if (q.minus_128)
    report.warning("q8_0-scale", file, s.name, std::to_string(q.minus_128) + " blocks hold the quant -128" + first_bad,
                   "quants in -127..127 (round(x / (amax / 127)))", bad_at);
  if (q.max > kQ8_0ScaleMax)
    report.warning("q8_0-scale", file, s.name, "block scale " + std::to_string(q.max) + " (block " +
                   std::to_string(q.first_max_block) + ") decodes to values beyond the f16 range",
                   "|scale| <= 65504 / 127", block_at(q.first_max_block));
}

bool has_value_findings(const TensorValueStats& s) {
  const bool q8_bad = s.q8_0 && (s.q8_0->first_bad_block || s.q8_0->max > kQ8_0ScaleMax);
  return s.read_failure || s.nan || s.inf || (s.elements > 0 && s.zeros == s.elements) || s.scale_max >= kModelBinScaleLimit ||
         (s.scale_min >= 0 && s.scale_min < kPlausibleMinScale) || s.abs_max > kNormGainMax || q8_bad;
}

}  // namespace

std::vector<TensorValueStats> check_values(const CanonicalModel& model, const std::string& file, Report& report,
                                           unsigned threads) {
  std::vector<TensorValueStats> stats(model.tensors.size());
  parallel_for(model.tensors.size(), threads, [&](size_t i) { stats[i] = tensor_stats(model.tensors[i]); });

  // Where the tensors lie is looked up only when there is something to point at.
  std::vector<std::optional<TensorLocation>> locations(model.tensors.size());
  if (std::any_of(stats.begin(), stats.end(), has_value_findings)) {
    try {
      locations = locate_tensors(model, file);
    } catch (const FormatError&) {
      // An in-memory model (tests) or a file that went away: the findings go without offsets.
    } catch (const std::filesystem::filesystem_error&) {
    }
  }
  for (size_t i = 0; i < stats.size(); ++i) report_tensor(model.tensors[i], stats[i], locations[i], file, report);
  return stats;
}

}  // namespace gptoss

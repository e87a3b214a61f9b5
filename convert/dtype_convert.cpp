#include "convert/dtype_convert.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "formats/codecs/float_codec.h"
#include "formats/codecs/mxfp4.h"

namespace gptoss {

void ConversionStats::merge(uint64_t n, uint64_t n_changed, double err, double value) {
  std::lock_guard lock(mutex);
  elements += n;
  changed += n_changed;
  max_abs_error = std::max(max_abs_error, err);
  max_abs_value = std::max(max_abs_value, value);
}

bool conversion_is_exact(DType from, DType to) {
  if (from == to) return true;
  if (to == DType::F32) return from == DType::BF16 || from == DType::F16;
  return false;
}

namespace {
// Values go through f32 a tile at a time, small enough that the decoded values, the encoding and
// the decoded-back values for the error measurement stay in the first-level cache.
constexpr size_t kTileElements = 4096;  // a multiple of every block size

// What a ConvertSource writes of the decoded values: another dtype, or one half of the OpenAI
// MXFP4 pair.
enum class Target { Dtype, Mxfp4Blocks, Mxfp4Scales };

uint64_t target_bytes(Target target, DType to, uint64_t elements) {
  switch (target) {
    case Target::Dtype: return *dtype_byte_size(to, elements);
    case Target::Mxfp4Blocks: return mxfp4_pair_byte_size(elements)->blocks;
    case Target::Mxfp4Scales: return mxfp4_pair_byte_size(elements)->scales;
  }
  return 0;
}

class ConvertSource final : public TransformRowSource {
 public:
  ConvertSource(TensorSourcePtr src, DType from, DType to, Target target, uint64_t row_elements,
                std::shared_ptr<ConversionStats> stats)
      : TransformRowSource(src->size() / *dtype_byte_size(from, row_elements), target_bytes(target, to, row_elements), {src}),
        src_(std::move(src)), from_(from), to_(to), target_(target), row_elements_(row_elements),
        from_row_bytes_(*dtype_byte_size(from, row_elements)),
        stats_(conversion_is_exact(from, to) || target == Target::Mxfp4Scales ? nullptr : std::move(stats)) {}

 protected:
  void produce(uint64_t first_row, uint64_t count, uint8_t* out) const override {
    // Rows are whole blocks on both sides, so the rows are one run of elements.
    const uint64_t elements = count * row_elements_;
    std::vector<uint8_t> scratch;
    std::span<const uint8_t> whole;
    if (src_->contiguous()) whole = view_or_read(*src_, first_row * from_row_bytes_, count * from_row_bytes_, scratch);
    float values[kTileElements], back[kTileElements];
    uint8_t scales[kTileElements / kMxfp4BlockElements];  // the pair's scales beside its blocks
    ValueDifferences differences;
    for (uint64_t done = 0; done < elements; done += kTileElements) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(kTileElements, elements - done));
      const uint64_t in_at = *dtype_byte_size(from_, done), in_bytes = *dtype_byte_size(from_, n);
      const std::span<const uint8_t> in =
          whole.empty() ? view_or_read(*src_, first_row * from_row_bytes_ + in_at, in_bytes, scratch)
                        : whole.subspan(in_at, in_bytes);
      uint8_t* dst = out + target_bytes(target_, to_, done);
      decode_to_f32(from_, in.data(), n, values);
      switch (target_) {
        case Target::Dtype: encode_from_f32(to_, values, n, dst); break;
        case Target::Mxfp4Blocks: mxfp4::quantize_oai(values, n / kMxfp4BlockElements, dst, scales); break;
        case Target::Mxfp4Scales: mxfp4::shared_exponents(values, n / kMxfp4BlockElements, dst); break;
      }
      if (!stats_) continue;
      if (target_ == Target::Dtype) decode_to_f32(to_, dst, n, back);
      else mxfp4::dequantize_oai(dst, scales, n / kMxfp4BlockElements, back);
      measure_differences(values, back, n, differences);
    }
    if (stats_) stats_->merge(elements, differences.changed, differences.max_abs_error, differences.max_abs_value);
  }

 private:
  TensorSourcePtr src_;
  DType from_, to_;
  Target target_;
  uint64_t row_elements_, from_row_bytes_;
  std::shared_ptr<ConversionStats> stats_;  // null for exact conversions and the pair's scales: nothing to measure
};

void check_convertible(DType from, DType to, uint64_t row_elements) {
  if (!is_decodable(from) || !is_encodable(to))
    throw std::invalid_argument("cannot convert " + std::string(dtype_name(from)) + " to " + std::string(dtype_name(to)));
  if (!dtype_byte_size(from, row_elements) || !dtype_byte_size(to, row_elements))
    throw std::invalid_argument("row of " + std::to_string(row_elements) + " elements is not a whole number of " +
                                "blocks for " + std::string(dtype_name(from)) + " -> " + std::string(dtype_name(to)));
}
}  // namespace

TensorSourcePtr convert_dtype(TensorSourcePtr source, DType from, DType to, uint64_t row_elements,
                              std::shared_ptr<ConversionStats> stats) {
  if (from == to) return source;
  check_convertible(from, to, row_elements);
  return std::make_shared<ConvertSource>(std::move(source), from, to, Target::Dtype, row_elements, std::move(stats));
}

Mxfp4PairSources quantize_mxfp4_pair(TensorSourcePtr source, DType from, uint64_t row_elements,
                                     std::shared_ptr<ConversionStats> stats) {
  check_convertible(from, DType::MXFP4, row_elements);
  return {std::make_shared<ConvertSource>(source, from, DType::MXFP4, Target::Mxfp4Blocks, row_elements, std::move(stats)),
          std::make_shared<ConvertSource>(source, from, DType::MXFP4, Target::Mxfp4Scales, row_elements, nullptr)};
}

TensorSourcePtr convert_declared(std::vector<LossyStep>& lossy, const std::string& name, TensorSourcePtr source,
                                 DType from, DType to, uint64_t row_elements) {
  if (from == to) return source;
  auto stats = std::make_shared<ConversionStats>();
  if (!conversion_is_exact(from, to)) lossy.push_back({name, from, to, stats});
  return convert_dtype(std::move(source), from, to, row_elements, stats);
}

void append_lossy_notes(const std::vector<LossyStep>& lossy, std::vector<std::string>& notes) {
  for (const auto& l : lossy) {
    if (!l.stats->changed) continue;
    std::ostringstream s;
    s << l.name << ": " << dtype_name(l.from) << " -> " << dtype_name(l.to) << " changed " << l.stats->changed << " of "
      << l.stats->elements << " values, max abs error " << l.stats->max_abs_error << " (max abs value "
      << l.stats->max_abs_value << ")";
    notes.push_back(s.str());
  }
}

}  // namespace gptoss

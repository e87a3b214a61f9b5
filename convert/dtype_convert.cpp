#include "convert/dtype_convert.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "formats/codecs/float_codec.h"

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

class ConvertSource final : public TransformRowSource {
 public:
  ConvertSource(TensorSourcePtr src, DType from, DType to, uint64_t row_elements, std::shared_ptr<ConversionStats> stats)
      : TransformRowSource(src->size() / *dtype_byte_size(from, row_elements), *dtype_byte_size(to, row_elements), {src}),
        src_(std::move(src)), from_(from), to_(to), row_elements_(row_elements),
        from_row_bytes_(*dtype_byte_size(from, row_elements)),
        stats_(conversion_is_exact(from, to) ? nullptr : std::move(stats)) {}

 protected:
  void produce(uint64_t first_row, uint64_t count, uint8_t* out) const override {
    // Rows are whole blocks on both sides, so the rows are one run of elements.
    const uint64_t elements = count * row_elements_;
    std::vector<uint8_t> scratch;
    std::span<const uint8_t> whole;
    if (src_->contiguous()) whole = view_or_read(*src_, first_row * from_row_bytes_, count * from_row_bytes_, scratch);
    float values[kTileElements], back[kTileElements];
    ValueDifferences differences;
    for (uint64_t done = 0; done < elements; done += kTileElements) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(kTileElements, elements - done));
      const uint64_t in_at = *dtype_byte_size(from_, done), in_bytes = *dtype_byte_size(from_, n);
      const std::span<const uint8_t> in =
          whole.empty() ? view_or_read(*src_, first_row * from_row_bytes_ + in_at, in_bytes, scratch)
                        : whole.subspan(in_at, in_bytes);
      uint8_t* dst = out + *dtype_byte_size(to_, done);
      decode_to_f32(from_, in.data(), n, values);
      encode_from_f32(to_, values, n, dst);
      if (!stats_) continue;
      decode_to_f32(to_, dst, n, back);
      measure_differences(values, back, n, differences);
    }
    if (stats_) stats_->merge(elements, differences.changed, differences.max_abs_error, differences.max_abs_value);
  }

 private:
  TensorSourcePtr src_;
  DType from_, to_;
  uint64_t row_elements_, from_row_bytes_;
  std::shared_ptr<ConversionStats> stats_;  // null for exact conversions: nothing to measure
};
}  // namespace

TensorSourcePtr convert_dtype(TensorSourcePtr source, DType from, DType to, uint64_t row_elements,
                              std::shared_ptr<ConversionStats> stats) {
  if (from == to) return source;
  if (!is_decodable(from) || !is_encodable(to))
    throw std::invalid_argument("cannot convert " + std::string(dtype_name(from)) + " to " + std::string(dtype_name(to)));
  if (!dtype_byte_size(from, row_elements) || !dtype_byte_size(to, row_elements))
    throw std::invalid_argument("row of " + std::to_string(row_elements) + " elements is not a whole number of " +
                                "blocks for " + std::string(dtype_name(from)) + " -> " + std::string(dtype_name(to)));
  return std::make_shared<ConvertSource>(std::move(source), from, to, row_elements, std::move(stats));
}

}  // namespace gptoss

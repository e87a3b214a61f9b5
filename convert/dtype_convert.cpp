#include "convert/dtype_convert.h"

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
class ConvertSource final : public RowSource {
 public:
  ConvertSource(TensorSourcePtr src, DType from, DType to, uint64_t row_elements, std::shared_ptr<ConversionStats> stats)
      : RowSource(src->size() / *dtype_byte_size(from, row_elements), *dtype_byte_size(to, row_elements)),
        src_(std::move(src)), from_(from), to_(to), row_elements_(row_elements),
        from_row_bytes_(*dtype_byte_size(from, row_elements)), stats_(std::move(stats)) {}

  void release_pages() const override { src_->release_pages(); }

 protected:
  void produce(uint64_t first_row, uint64_t count, uint8_t* out) const override {
    // Bounded work per call: at most a few MB of f32 at a time.
    const uint64_t rows_per_step = std::max<uint64_t>(1, (4u << 20) / (row_elements_ * 4));
    std::vector<uint8_t> in;
    std::vector<float> values, back;
    for (uint64_t done = 0; done < count; done += rows_per_step) {
      const uint64_t rows = std::min(rows_per_step, count - done);
      const size_t n = static_cast<size_t>(rows * row_elements_);
      in.resize(rows * from_row_bytes_);
      src_->read((first_row + done) * from_row_bytes_, in);
      src_->release_range((first_row + done) * from_row_bytes_, in.size());  // rows map 1:1
      values.resize(n);
      decode_to_f32(from_, in.data(), n, values.data());
      uint8_t* dst = out + done * row_bytes();
      encode_from_f32(to_, values.data(), n, dst);
      if (stats_) {
        back.resize(n);
        decode_to_f32(to_, dst, n, back.data());
        uint64_t changed = 0;
        double err = 0, vmax = 0;
        for (size_t i = 0; i < n; ++i) {
          const double e = std::fabs(static_cast<double>(back[i]) - values[i]);
          if (e > 0 || std::isnan(e)) ++changed;
          if (e > err) err = e;
          vmax = std::max(vmax, static_cast<double>(std::fabs(values[i])));
        }
        stats_->merge(n, changed, err, vmax);
      }
    }
  }

 private:
  TensorSourcePtr src_;
  DType from_, to_;
  uint64_t row_elements_, from_row_bytes_;
  std::shared_ptr<ConversionStats> stats_;
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

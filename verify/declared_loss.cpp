#include "verify/declared_loss.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "formats/codecs/float_codec.h"

namespace gptoss {

namespace {

// Decoded values of rows [first, first + rows) of a dense tensor.
std::vector<float> decode_rows(const CanonicalTensor& t, uint64_t first, uint64_t rows) {
  const uint64_t row = t.spec.shape.back();
  const uint64_t row_bytes = *dtype_byte_size(t.dtype, row);
  std::vector<uint8_t> raw(rows * row_bytes);
  t.source->read(first * row_bytes, raw);
  t.source->release_range(first * row_bytes, raw.size());
  std::vector<float> out(rows * row);
  decode_to_f32(t.dtype, raw.data(), out.size(), out.data());
  return out;
}

// MXFP4's allowance (declared_loss.h): the grid step d of a block whose largest magnitude is
// `block_amax`, the larger grid's (2d) half step wherever it differs, and the clipping above 12d.
double mxfp4_allowance(double magnitude, double block_amax) {
  if (!(block_amax > 0)) return 0;
  if (block_amax < 0x1p-125) return magnitude;  // ggml's scale byte wraps there: the block becomes zeros
  int exponent = 0;
  std::frexp(block_amax, &exponent);  // block_amax in [2^(exponent-1), 2^exponent)
  const double d = std::ldexp(1.0, exponent - 1 - 3);
  return magnitude <= 8 * d ? d : std::max(2 * d, magnitude - 12 * d);
}

// Largest error of storing a value of `magnitude` in `dtype`; `block_amax` is the source block's
// largest magnitude (Q8_0 and MXFP4 only).
double rounding_allowance(DType dtype, double magnitude, double block_amax) {
  switch (dtype) {
    case DType::BF16: return magnitude * 0x1p-8;
    case DType::F16: return magnitude * 0x1p-11 + 0x1p-25;
    case DType::Q8_0: return block_amax / 127 * (0.5 + 127 * 0x1p-11 + 1e-4) + 127 * 0x1p-25;
    case DType::MXFP4: return mxfp4_allowance(magnitude, block_amax);
    default: return has_per_element_bound(dtype) ? 0 : INFINITY;  // the tensor-level ceiling applies
  }
}

// Largest |x| of each Q8_0 or MXFP4 block (32 consecutive values of a row).
static_assert(kQ8_0BlockElements == kMxfp4BlockElements);
std::vector<double> block_maxima(const std::vector<float>& v) {
  std::vector<double> out((v.size() + kQ8_0BlockElements - 1) / kQ8_0BlockElements, 0.0);
  for (size_t i = 0; i < v.size(); ++i) out[i / kQ8_0BlockElements] = std::max<double>(out[i / kQ8_0BlockElements], std::fabs(v[i]));
  return out;
}

}  // namespace

bool has_per_element_bound(DType dtype) {
  return dtype_info(dtype).block_elements == 1 || dtype == DType::Q8_0 || dtype == DType::MXFP4;
}

double rms_error_ceiling(DType dtype) {
  if (has_per_element_bound(dtype)) return 0;
  const auto& info = dtype_info(dtype);
  const double bits_per_weight = 8.0 * info.block_bytes / info.block_elements;
  return std::min(0.9, 3 * std::exp2(1 - bits_per_weight));
}

double DeclaredLossMeasure::relative_rms_error() const {
  if (sum_squared_reference > 0) return std::sqrt(sum_squared_error / sum_squared_reference);
  return sum_squared_error > 0 ? INFINITY : 0;
}

DeclaredLossMeasure measure_declared_loss(const CanonicalTensor& a, const CanonicalTensor& b, uint64_t rows) {
  DeclaredLossMeasure m;
  const uint64_t row = a.spec.shape.back();
  const bool same_encoding = a.dtype == b.dtype;
  auto per_block = [](DType t) { return t == DType::Q8_0 || t == DType::MXFP4; };
  const bool blocks = !same_encoding && (per_block(a.dtype) || per_block(b.dtype));
  const uint64_t step = std::max<uint64_t>(1, (2u << 20) / row);
  for (uint64_t r = 0; r < rows; r += step) {
    const uint64_t n = std::min(step, rows - r);
    const auto x = decode_rows(a, r, n), y = decode_rows(b, r, n);
    const auto amax_x = blocks ? block_maxima(x) : std::vector<double>{};
    const auto amax_y = blocks ? block_maxima(y) : std::vector<double>{};
    for (size_t i = 0; i < x.size(); ++i) {
      m.max_reference = std::max(m.max_reference, static_cast<double>(std::fabs(x[i])));
      if (std::isnan(x[i]) || std::isnan(y[i])) {
        ++m.nan;
        m.max_abs_error = INFINITY;
        continue;
      }
      const double error = std::fabs(static_cast<double>(x[i]) - y[i]);
      m.max_abs_error = std::max(m.max_abs_error, error);
      m.sum_squared_error += error * error;
      m.sum_squared_reference += static_cast<double>(x[i]) * x[i];
      double allowance = 0;
      if (!same_encoding) {
        const double magnitude = std::max(std::fabs(x[i]), std::fabs(y[i]));
        const size_t block = i / kQ8_0BlockElements;
        // A Q8_0 or MXFP4 side's step comes from the other side's block: the values it was quantized from.
        allowance = rounding_allowance(a.dtype, magnitude, blocks ? amax_y[block] : 0) +
                    rounding_allowance(b.dtype, magnitude, blocks ? amax_x[block] : 0);
      }
      if (error > allowance) {
        if (!m.beyond++) {
          m.first_beyond = r * row + i;
          m.first_beyond_error = error;
          m.first_beyond_allowance = allowance;
        }
      }
    }
  }
  return m;
}

}  // namespace gptoss

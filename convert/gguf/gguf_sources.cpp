#include "convert/gguf/gguf_sources.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "formats/codecs/mxfp4.h"
#include "formats/core/dtype.h"

namespace gptoss {
namespace {
// Input bytes per step of a produce() call that has to copy its input (an input not in memory), so
// a chunk of a transform never buffers more than this per thread.
constexpr uint64_t kStepBytes = 256u << 10;

uint64_t units_per_step(uint64_t unit_bytes) { return std::max<uint64_t>(1, kStepBytes / unit_bytes); }

class StridedUnits final : public TransformRowSource {
 public:
  StridedUnits(TensorSourcePtr src, uint64_t unit_bytes, uint64_t stride, uint64_t phase)
      : TransformRowSource(src->size() / unit_bytes / stride, unit_bytes, {src}),
        src_(std::move(src)), stride_(stride), phase_(phase) {}

 protected:
  void produce(uint64_t first, uint64_t count, uint8_t* out) const override {
    const uint64_t ub = row_bytes();
    std::vector<uint8_t> scratch;
    for (uint64_t done = 0; done < count;) {
      const uint64_t n = std::min(units_per_step(ub * stride_), count - done);
      const uint64_t first_src = stride_ * (first + done) + phase_;
      const auto in = view_or_read(*src_, first_src * ub, (stride_ * (n - 1) + 1) * ub, scratch);
      for (uint64_t k = 0; k < n; ++k) std::memcpy(out + (done + k) * ub, in.data() + k * stride_ * ub, ub);
      done += n;
    }
  }

 private:
  TensorSourcePtr src_;
  uint64_t stride_, phase_;
};

class InterleavedUnits final : public TransformRowSource {
 public:
  InterleavedUnits(TensorSourcePtr a, TensorSourcePtr b, uint64_t unit_bytes)
      : TransformRowSource(2 * (a->size() / unit_bytes), unit_bytes, {a, b}), a_(std::move(a)), b_(std::move(b)) {}

 protected:
  void produce(uint64_t first, uint64_t count, uint8_t* out) const override {
    const uint64_t ub = row_bytes();
    std::vector<uint8_t> scratch_a, scratch_b;
    for (uint64_t done = 0; done < count;) {
      const uint64_t n = std::min(2 * units_per_step(ub), count - done);
      const uint64_t lo = (first + done) / 2, hi = (first + done + n - 1) / 2;  // pair indices, inclusive
      const auto from_a = view_or_read(*a_, lo * ub, (hi - lo + 1) * ub, scratch_a);
      const auto from_b = view_or_read(*b_, lo * ub, (hi - lo + 1) * ub, scratch_b);
      for (uint64_t k = 0; k < n; ++k) {
        const uint64_t unit = first + done + k;
        const auto& side = unit % 2 == 0 ? from_a : from_b;
        std::memcpy(out + (done + k) * ub, side.data() + (unit / 2 - lo) * ub, ub);
      }
      done += n;
    }
  }

 private:
  TensorSourcePtr a_, b_;
};

class GgmlFromOai final : public TransformRowSource {
 public:
  GgmlFromOai(TensorSourcePtr blocks, TensorSourcePtr scales, uint64_t bpr, uint64_t stride, uint64_t phase)
      : TransformRowSource(scales->size() / bpr / stride, bpr * kMxfp4GgmlBlockBytes, {blocks, scales}),
        blocks_(std::move(blocks)), scales_(std::move(scales)), bpr_(bpr), stride_(stride), phase_(phase) {
    if (blocks_->size() != scales_->size() * kMxfp4OaiBlockBytes)
      throw std::invalid_argument("MXFP4 blocks and scales disagree in size");
  }

 protected:
  void produce(uint64_t first, uint64_t count, uint8_t* out) const override {
    std::vector<uint8_t> blocks_scratch, scales_scratch;
    for (uint64_t done = 0; done < count;) {
      const uint64_t n = std::min(units_per_step(stride_ * bpr_ * kMxfp4OaiBlockBytes), count - done);
      const uint64_t first_src = stride_ * (first + done) + phase_;
      const uint64_t span_rows = stride_ * (n - 1) + 1;
      const auto blocks = view_or_read(*blocks_, first_src * bpr_ * kMxfp4OaiBlockBytes,
                                       span_rows * bpr_ * kMxfp4OaiBlockBytes, blocks_scratch);
      const auto scales = view_or_read(*scales_, first_src * bpr_, span_rows * bpr_, scales_scratch);
      if (stride_ == 1) {
        mxfp4::oai_blocks_to_ggml(blocks.data(), scales.data(), n * bpr_, out + done * row_bytes());
      } else {
        for (uint64_t k = 0; k < n; ++k)
          mxfp4::oai_blocks_to_ggml(blocks.data() + k * stride_ * bpr_ * kMxfp4OaiBlockBytes,
                                    scales.data() + k * stride_ * bpr_, bpr_, out + (done + k) * row_bytes());
      }
      done += n;
    }
  }

 private:
  TensorSourcePtr blocks_, scales_;
  uint64_t bpr_, stride_, phase_;
};

class OaiFromGgml final : public TransformRowSource {
 public:
  OaiFromGgml(TensorSourcePtr ggml, uint64_t bpr, bool scales)
      : TransformRowSource(ggml->size() / (bpr * kMxfp4GgmlBlockBytes), scales ? bpr : bpr * kMxfp4OaiBlockBytes, {ggml}),
        ggml_(std::move(ggml)), bpr_(bpr), scales_(scales) {}

 protected:
  void produce(uint64_t first, uint64_t count, uint8_t* out) const override {
    const uint64_t ggml_row = bpr_ * kMxfp4GgmlBlockBytes;
    std::vector<uint8_t> scratch;
    for (uint64_t done = 0; done < count;) {
      const uint64_t n = std::min(units_per_step(ggml_row), count - done);
      const auto rows = view_or_read(*ggml_, (first + done) * ggml_row, n * ggml_row, scratch);
      uint8_t* dst = out + done * row_bytes();
      if (scales_) mxfp4::ggml_scales(rows.data(), n * bpr_, dst);
      else mxfp4::ggml_blocks_to_oai(rows.data(), n * bpr_, dst);
      done += n;
    }
  }

 private:
  TensorSourcePtr ggml_;
  uint64_t bpr_;
  bool scales_;
};
}  // namespace

TensorSourcePtr make_strided_units(TensorSourcePtr source, uint64_t unit_bytes, uint64_t stride, uint64_t phase) {
  if (unit_bytes == 0 || stride == 0 || phase >= stride || source->size() % unit_bytes != 0 ||
      (source->size() / unit_bytes) % stride != 0)
    throw std::invalid_argument("strided units: source is not a whole number of strides");
  if (stride == 1) return source;
  return std::make_shared<StridedUnits>(std::move(source), unit_bytes, stride, phase);
}

TensorSourcePtr make_interleaved_units(TensorSourcePtr a, TensorSourcePtr b, uint64_t unit_bytes) {
  if (unit_bytes == 0 || a->size() != b->size() || a->size() % unit_bytes != 0)
    throw std::invalid_argument("interleaved units: sources must be equal and a whole number of units");
  return std::make_shared<InterleavedUnits>(std::move(a), std::move(b), unit_bytes);
}

TensorSourcePtr make_ggml_mxfp4_rows(TensorSourcePtr oai_blocks, TensorSourcePtr oai_scales, uint64_t blocks_per_row,
                                     uint64_t stride, uint64_t phase) {
  if (blocks_per_row == 0 || stride == 0 || phase >= stride || oai_scales->size() % (blocks_per_row * stride) != 0)
    throw std::invalid_argument("MXFP4 rows: scales are not a whole number of row groups");
  return std::make_shared<GgmlFromOai>(std::move(oai_blocks), std::move(oai_scales), blocks_per_row, stride, phase);
}

TensorSourcePtr make_oai_blocks_from_ggml(TensorSourcePtr ggml_rows, uint64_t blocks_per_row) {
  if (blocks_per_row == 0 || ggml_rows->size() % (blocks_per_row * kMxfp4GgmlBlockBytes) != 0)
    throw std::invalid_argument("ggml MXFP4 data is not a whole number of rows");
  return std::make_shared<OaiFromGgml>(std::move(ggml_rows), blocks_per_row, false);
}

TensorSourcePtr make_oai_scales_from_ggml(TensorSourcePtr ggml_rows, uint64_t blocks_per_row) {
  if (blocks_per_row == 0 || ggml_rows->size() % (blocks_per_row * kMxfp4GgmlBlockBytes) != 0)
    throw std::invalid_argument("ggml MXFP4 data is not a whole number of rows");
  return std::make_shared<OaiFromGgml>(std::move(ggml_rows), blocks_per_row, true);
}

}  // namespace gptoss

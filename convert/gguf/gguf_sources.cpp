#include "convert/gguf/gguf_sources.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "formats/codecs/mxfp4.h"
#include "formats/core/dtype.h"

namespace gptoss {
namespace {
// Work per step of a produce() call, so a 16 MB read of a transform never buffers more than this.
constexpr uint64_t kStepBytes = 4u << 20;

uint64_t units_per_step(uint64_t unit_bytes) { return std::max<uint64_t>(1, kStepBytes / unit_bytes); }

class StridedUnits final : public RowSource {
 public:
  StridedUnits(TensorSourcePtr src, uint64_t unit_bytes, uint64_t stride, uint64_t phase)
      : RowSource(src->size() / unit_bytes / stride, unit_bytes),
        src_(std::move(src)), stride_(stride), phase_(phase) {}

  void release_pages() const override { src_->release_pages(); }

 protected:
  void produce(uint64_t first, uint64_t count, uint8_t* out) const override {
    const uint64_t ub = row_bytes();
    std::vector<uint8_t> buffer;
    for (uint64_t done = 0; done < count;) {
      const uint64_t n = std::min(units_per_step(ub * stride_), count - done);
      const uint64_t first_src = stride_ * (first + done) + phase_;
      const uint64_t span_units = stride_ * (n - 1) + 1;
      buffer.resize(span_units * ub);
      src_->read(first_src * ub, buffer);
      for (uint64_t k = 0; k < n; ++k) std::memcpy(out + (done + k) * ub, buffer.data() + k * stride_ * ub, ub);
      done += n;
    }
  }

 private:
  TensorSourcePtr src_;
  uint64_t stride_, phase_;
};

class InterleavedUnits final : public RowSource {
 public:
  InterleavedUnits(TensorSourcePtr a, TensorSourcePtr b, uint64_t unit_bytes)
      : RowSource(2 * (a->size() / unit_bytes), unit_bytes), a_(std::move(a)), b_(std::move(b)) {}

  void release_pages() const override { a_->release_pages(); b_->release_pages(); }

 protected:
  void produce(uint64_t first, uint64_t count, uint8_t* out) const override {
    const uint64_t ub = row_bytes();
    std::vector<uint8_t> from_a, from_b;
    for (uint64_t done = 0; done < count;) {
      const uint64_t n = std::min(2 * units_per_step(ub), count - done);
      const uint64_t lo = (first + done) / 2, hi = (first + done + n - 1) / 2;  // pair indices, inclusive
      from_a.resize((hi - lo + 1) * ub);
      from_b.resize((hi - lo + 1) * ub);
      a_->read(lo * ub, from_a);
      b_->read(lo * ub, from_b);
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

class GgmlFromOai final : public RowSource {
 public:
  GgmlFromOai(TensorSourcePtr blocks, TensorSourcePtr scales, uint64_t bpr, uint64_t stride, uint64_t phase)
      : RowSource(scales->size() / bpr / stride, bpr * kMxfp4GgmlBlockBytes),
        blocks_(std::move(blocks)), scales_(std::move(scales)), bpr_(bpr), stride_(stride), phase_(phase) {
    if (blocks_->size() != scales_->size() * kMxfp4OaiBlockBytes)
      throw std::invalid_argument("MXFP4 blocks and scales disagree in size");
  }

  void release_pages() const override { blocks_->release_pages(); scales_->release_pages(); }

 protected:
  void produce(uint64_t first, uint64_t count, uint8_t* out) const override {
    std::vector<uint8_t> blocks, scales;
    for (uint64_t done = 0; done < count;) {
      const uint64_t n = std::min(units_per_step(stride_ * row_bytes()), count - done);
      const uint64_t first_src = stride_ * (first + done) + phase_;
      const uint64_t span_rows = stride_ * (n - 1) + 1;
      blocks.resize(span_rows * bpr_ * kMxfp4OaiBlockBytes);
      scales.resize(span_rows * bpr_);
      blocks_->read(first_src * bpr_ * kMxfp4OaiBlockBytes, blocks);
      scales_->read(first_src * bpr_, scales);
      for (uint64_t k = 0; k < n; ++k) {
        const uint64_t src_row = k * stride_;
        uint8_t* dst = out + (done + k) * row_bytes();
        for (uint64_t b = 0; b < bpr_; ++b)
          mxfp4::oai_block_to_ggml(blocks.data() + (src_row * bpr_ + b) * kMxfp4OaiBlockBytes,
                                   scales[src_row * bpr_ + b], dst + b * kMxfp4GgmlBlockBytes);
      }
      done += n;
    }
  }

 private:
  TensorSourcePtr blocks_, scales_;
  uint64_t bpr_, stride_, phase_;
};

class OaiFromGgml final : public RowSource {
 public:
  OaiFromGgml(TensorSourcePtr ggml, uint64_t bpr, bool scales)
      : RowSource(ggml->size() / (bpr * kMxfp4GgmlBlockBytes), scales ? bpr : bpr * kMxfp4OaiBlockBytes),
        ggml_(std::move(ggml)), bpr_(bpr), scales_(scales) {}

  void release_pages() const override { ggml_->release_pages(); }

 protected:
  void produce(uint64_t first, uint64_t count, uint8_t* out) const override {
    const uint64_t ggml_row = bpr_ * kMxfp4GgmlBlockBytes;
    std::vector<uint8_t> rows;
    uint8_t oai[kMxfp4OaiBlockBytes];
    for (uint64_t done = 0; done < count;) {
      const uint64_t n = std::min(units_per_step(ggml_row), count - done);
      rows.resize(n * ggml_row);
      ggml_->read((first + done) * ggml_row, rows);
      for (uint64_t b = 0; b < n * bpr_; ++b) {
        const uint8_t* block = rows.data() + b * kMxfp4GgmlBlockBytes;
        uint8_t* dst = out + done * row_bytes();
        if (scales_) {
          dst[b] = block[0];
        } else {
          uint8_t scale;
          mxfp4::ggml_block_to_oai(block, oai, &scale);
          std::memcpy(dst + b * kMxfp4OaiBlockBytes, oai, kMxfp4OaiBlockBytes);
        }
      }
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

#include "convert/modelbin/modelbin_transforms.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "formats/codecs/float_codec.h"
#include "formats/codecs/lanes.h"
#include "formats/core/error.h"
#include "formats/core/float16.h"
#include "formats/core/mapped_file.h"

namespace gptoss {
namespace {

class QkTransformSource final : public TransformRowSource {
 public:
  QkTransformSource(TensorSourcePtr source, uint64_t rows, uint64_t row_bytes, uint32_t head_dim, QkDirection direction,
                    float scale, std::shared_ptr<std::atomic<uint64_t>> inexact)
      : TransformRowSource(rows, row_bytes, {source}),
        source_(std::move(source)),
        head_dim_(head_dim),
        direction_(direction),
        scale_(scale),
        inexact_(std::move(inexact)) {}

 protected:
  void produce(uint64_t first_row, uint64_t count, uint8_t* out) const override {
    const uint64_t rb = row_bytes();
    const uint64_t half = head_dim_ / 2;
    // The rows of the heads this range touches, as one view where the source is in memory.
    const uint64_t first_head = first_row / head_dim_, end_head = (first_row + count + head_dim_ - 1) / head_dim_;
    std::vector<uint8_t> scratch;
    const auto heads = view_or_read(*source_, first_head * head_dim_ * rb,
                                    std::min(end_head * head_dim_, rows()) * rb - first_head * head_dim_ * rb, scratch);
    for (uint64_t k = 0; k < count; ++k) {
      const uint64_t row = first_row + k;
      const uint64_t head = row / head_dim_, j = row % head_dim_;
      uint64_t from;
      if (direction_ == QkDirection::ToModelBin)
        from = (j >> 1) + (j & 1) * half;  // model.bin row 2i <- i, 2i+1 <- i + D/2
      else
        from = j < half ? 2 * j : 2 * (j - half) + 1;
      std::memcpy(out + k * rb, heads.data() + ((head - first_head) * head_dim_ + from) * rb, rb);
    }
    const uint64_t lossy = scale_bf16_in_place(out, count * rb / 2, scale_);
    if (lossy && inexact_) *inexact_ += lossy;
  }

 private:
  TensorSourcePtr source_;
  uint32_t head_dim_;
  QkDirection direction_;
  float scale_;
  std::shared_ptr<std::atomic<uint64_t>> inexact_;
};

class ScaleOffsetSource final : public TensorSource {
 public:
  ScaleOffsetSource(TensorSourcePtr source, int delta, std::string file, std::string field,
                    std::optional<uint64_t> file_base)
      : source_(std::move(source)), delta_(delta), file_(std::move(file)), field_(std::move(field)), base_(file_base) {}
  uint64_t size() const override { return source_->size(); }
  void read(uint64_t offset, std::span<uint8_t> out) const override {
    source_->read(offset, out);
    // Bytes that leave 0..255 are rare: add first (wrapping), look for one only when any wrapped.
    const auto delta = static_cast<uint8_t>(delta_);
    // A byte wrapped when it is at or beyond the limit: 256 - delta going up, |delta| going down.
    const auto limit = static_cast<uint8_t>(delta_ > 0 ? 256 - delta_ : -delta_);
    using lanes::u8x16;
    u8x16 wrapped{};
    size_t i = 0;
    for (; i + 16 <= out.size(); i += 16) {
      const u8x16 v = lanes::load<u8x16>(out.data() + i);
      wrapped |= std::bit_cast<u8x16>(delta_ > 0 ? v >= limit : v < limit);
      lanes::store(out.data() + i, static_cast<u8x16>(v + delta));
    }
    bool any_wrapped = false;
    for (int l = 0; l < 16; ++l) any_wrapped |= wrapped[l] != 0;
    for (; i < out.size(); ++i) {
      any_wrapped |= delta_ > 0 ? out[i] >= limit : out[i] < limit;
      out[i] = static_cast<uint8_t>(out[i] + delta);
    }
    if (!any_wrapped) return;
    for (i = 0; i < out.size(); ++i) {
      const int original = static_cast<uint8_t>(out[i] - delta);
      if (const int v = original + delta_; v >= 0 && v <= 255) continue;
      throw_format_error(file_, field_, base_ ? std::optional<uint64_t>(*base_ + offset + i) : std::nullopt,
                         "MXFP4 scale byte " + std::to_string(original) + " at element " + std::to_string(offset + i) +
                             (delta_ > 0 ? ": model.bin stores scale + 14 in one byte, so scales >= 242 cannot be written"
                                         : ": a model.bin scale below 14 (stored = checkpoint scale + 14) has no "
                                           "checkpoint value"));
    }
  }
  void will_need(uint64_t offset, uint64_t size) const override { source_->will_need(offset, size); }
  void release_range(uint64_t offset, uint64_t size) const override { source_->release_range(offset, size); }

 private:
  TensorSourcePtr source_;
  int delta_;
  std::string file_, field_;
  std::optional<uint64_t> base_;
};

}  // namespace

TensorSourcePtr make_qk_transform(TensorSourcePtr source, uint64_t rows, uint64_t row_bytes, uint32_t head_dim,
                                  QkDirection direction, float scale, std::shared_ptr<std::atomic<uint64_t>> inexact) {
  return std::make_shared<QkTransformSource>(std::move(source), rows, row_bytes, head_dim, direction, scale,
                                             std::move(inexact));
}

TensorSourcePtr make_scale_offset(TensorSourcePtr source, int delta, std::string file, std::string field,
                                  std::optional<uint64_t> file_base) {
  return std::make_shared<ScaleOffsetSource>(std::move(source), delta, std::move(file), std::move(field), file_base);
}

}  // namespace gptoss

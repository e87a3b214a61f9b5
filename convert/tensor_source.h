#pragma once
// Where a canonical tensor's bytes come from. Conversion streams every tensor through
// read(offset, out) in bounded chunks, so a transform (QKV split, gate/up interleave, MXFP4
// repack, dtype change) is a source wrapping another source, never a copy of the whole model.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "formats/core/mapped_file.h"

namespace gptoss {

class TensorSource {
 public:
  virtual ~TensorSource() = default;
  virtual uint64_t size() const = 0;
  // Copies bytes [offset, offset + out.size()) of the tensor's encoding into `out`.
  virtual void read(uint64_t offset, std::span<uint8_t> out) const = 0;
  // The whole encoding as one view when it lies contiguously in memory (zero copy).
  virtual std::optional<std::span<const uint8_t>> contiguous() const { return std::nullopt; }
  // Drops this tensor's pages of mapped input files from the process (they stay in the page
  // cache). Writers call it after streaming a tensor, so resident memory stays bounded by one
  // tensor instead of growing to the whole input. Transforms forward it to their inputs.
  virtual void release_pages() const {}
  // The same for bytes [offset, offset + size) of the encoding, where that maps to input pages
  // directly (contiguous sources); used between the chunks of one large tensor.
  virtual void release_range(uint64_t offset, uint64_t size) const {
    (void)offset;
    (void)size;
  }
};

using TensorSourcePtr = std::shared_ptr<const TensorSource>;

// A range of a mapped file; keeps the mapping alive.
class MappedSource final : public TensorSource {
 public:
  MappedSource(std::shared_ptr<const MappedFile> file, std::span<const uint8_t> bytes)
      : file_(std::move(file)), bytes_(bytes) {}
  uint64_t size() const override { return bytes_.size(); }
  void read(uint64_t offset, std::span<uint8_t> out) const override;
  std::optional<std::span<const uint8_t>> contiguous() const override { return bytes_; }
  void release_pages() const override { release_range(0, bytes_.size()); }
  void release_range(uint64_t offset, uint64_t size) const override;

 private:
  std::shared_ptr<const MappedFile> file_;
  std::span<const uint8_t> bytes_;
};

// Bytes held in memory (small tensors, tests).
class OwnedSource final : public TensorSource {
 public:
  explicit OwnedSource(std::vector<uint8_t> bytes) : bytes_(std::move(bytes)) {}
  uint64_t size() const override { return bytes_.size(); }
  void read(uint64_t offset, std::span<uint8_t> out) const override;
  std::optional<std::span<const uint8_t>> contiguous() const override { return std::span<const uint8_t>(bytes_); }

 private:
  std::vector<uint8_t> bytes_;
};

// A tensor made of equal rows, each produced on demand: produce(first_row, count, out) fills
// count * row_bytes bytes. read() produces the rows covering the requested range.
class RowSource : public TensorSource {
 public:
  RowSource(uint64_t rows, uint64_t row_bytes) : rows_(rows), row_bytes_(row_bytes) {}
  uint64_t size() const final { return rows_ * row_bytes_; }
  uint64_t rows() const { return rows_; }
  uint64_t row_bytes() const { return row_bytes_; }
  void read(uint64_t offset, std::span<uint8_t> out) const final;

 protected:
  virtual void produce(uint64_t first_row, uint64_t count, uint8_t* out) const = 0;

 private:
  uint64_t rows_;
  uint64_t row_bytes_;
};

// A RowSource from a lambda.
class LambdaRowSource final : public RowSource {
 public:
  using Producer = std::function<void(uint64_t first_row, uint64_t count, uint8_t* out)>;
  LambdaRowSource(uint64_t rows, uint64_t row_bytes, Producer producer)
      : RowSource(rows, row_bytes), producer_(std::move(producer)) {}

 protected:
  void produce(uint64_t first_row, uint64_t count, uint8_t* out) const override { producer_(first_row, count, out); }

 private:
  Producer producer_;
};

// A byte range of another source (a plain row slice such as Q out of a fused QKV): zero copy
// when the parent is contiguous.
class SliceSource final : public TensorSource {
 public:
  SliceSource(TensorSourcePtr parent, uint64_t offset, uint64_t size)
      : parent_(std::move(parent)), offset_(offset), size_(size) {}
  uint64_t size() const override { return size_; }
  void read(uint64_t offset, std::span<uint8_t> out) const override { parent_->read(offset_ + offset, out); }
  std::optional<std::span<const uint8_t>> contiguous() const override;
  void release_pages() const override { parent_->release_range(offset_, size_); }
  void release_range(uint64_t offset, uint64_t size) const override { parent_->release_range(offset_ + offset, size); }

 private:
  TensorSourcePtr parent_;
  uint64_t offset_;
  uint64_t size_;
};

// Several sources back to back (QKV fused from separate Q, K and V).
class ConcatSource final : public TensorSource {
 public:
  explicit ConcatSource(std::vector<TensorSourcePtr> parts);
  uint64_t size() const override { return total_; }
  void read(uint64_t offset, std::span<uint8_t> out) const override;
  void release_pages() const override {
    for (const auto& p : parts_) p->release_pages();
  }

 private:
  std::vector<TensorSourcePtr> parts_;
  std::vector<uint64_t> starts_;
  uint64_t total_ = 0;
};

// The whole tensor in memory (reads through contiguous() when possible).
std::vector<uint8_t> read_all(const TensorSource& source);

// Streams a source to `sink` in chunks of at most `chunk_bytes`.
void stream_source(const TensorSource& source, const std::function<void(std::span<const uint8_t>)>& sink,
                   uint64_t chunk_bytes = 16u << 20);

}  // namespace gptoss

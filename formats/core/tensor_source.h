#pragma once
// Where a tensor's bytes come from. Conversion streams every tensor through read(offset, out) in
// bounded chunks, so a transform (QKV split, gate/up interleave, MXFP4 repack, dtype change) is a
// source wrapping another source, never a copy of the whole model. Sources are immutable once
// built: every member may run on several threads at once, for different ranges
// (OrderedChunkPipeline).
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
  // Copies bytes [offset, offset + out.size()) of the tensor's encoding into `out`. Thread-safe.
  virtual void read(uint64_t offset, std::span<uint8_t> out) const = 0;
  // The whole encoding as one view when it lies contiguously in memory (zero copy).
  virtual std::optional<std::span<const uint8_t>> contiguous() const { return std::nullopt; }
  // Reads whose offset and size are multiples of this cost least (a row of a row producer).
  virtual uint64_t granularity() const { return 1; }
  // Read-ahead: bytes [offset, offset + size) will be read soon. Mapped inputs have the kernel
  // fetch and map those pages now (on the calling thread, so several chunks ahead are fetched in
  // parallel); transforms pass the hint on to the input bytes they read.
  virtual void will_need(uint64_t offset, uint64_t size) const {
    (void)offset;
    (void)size;
  }
  // Drops the pages of mapped input files behind bytes [offset, offset + size) from the process
  // (they stay in the page cache): writers call it behind their cursor, so resident memory stays
  // bounded by the chunks in flight instead of growing to the whole input. Only whole pages inside
  // the input range go, so a neighbouring range's partly read page is never dropped mid-use.
  virtual void release_range(uint64_t offset, uint64_t size) const {
    (void)offset;
    (void)size;
  }
  void release_pages() const { release_range(0, size()); }
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
  void will_need(uint64_t offset, uint64_t size) const override;
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

// `bytes` as a source (small tensors, tests).
inline TensorSourcePtr owned_bytes(std::vector<uint8_t> bytes) { return std::make_shared<OwnedSource>(std::move(bytes)); }

// A tensor made of equal rows, each produced on demand: produce(first_row, count, out) fills
// count * row_bytes bytes. read() produces the rows covering the requested range.
class RowSource : public TensorSource {
 public:
  RowSource(uint64_t rows, uint64_t row_bytes) : rows_(rows), row_bytes_(row_bytes) {}
  uint64_t size() const final { return rows_ * row_bytes_; }
  uint64_t rows() const { return rows_; }
  uint64_t row_bytes() const { return row_bytes_; }
  uint64_t granularity() const final { return row_bytes_; }
  void read(uint64_t offset, std::span<uint8_t> out) const final;

 protected:
  // Called concurrently for different rows: no shared mutable state without a lock or atomics.
  virtual void produce(uint64_t first_row, uint64_t count, uint8_t* out) const = 0;

 private:
  uint64_t rows_;
  uint64_t row_bytes_;
};

// A row producer computed from input sources that it consumes front to back, each at a fixed ratio
// of its own size (a dtype change, an MXFP4 repack, a row permutation within heads, a stride):
// read-ahead hints and page releases of output bytes go to the same share of every input.
class TransformRowSource : public RowSource {
 public:
  TransformRowSource(uint64_t rows, uint64_t row_bytes, std::vector<TensorSourcePtr> inputs)
      : RowSource(rows, row_bytes), inputs_(std::move(inputs)) {}
  void will_need(uint64_t offset, uint64_t size) const override;
  void release_range(uint64_t offset, uint64_t size) const override;

 protected:
  const TensorSource& input(size_t i) const { return *inputs_[i]; }

 private:
  std::vector<TensorSourcePtr> inputs_;
};

// A RowSource from a lambda (no inputs: generated data).
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
  uint64_t granularity() const override;
  void will_need(uint64_t offset, uint64_t size) const override { parent_->will_need(offset_ + offset, size); }
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
  uint64_t granularity() const override { return granularity_; }
  void will_need(uint64_t offset, uint64_t size) const override;
  void release_range(uint64_t offset, uint64_t size) const override;

 private:
  // Calls fn(part, offset in part, bytes, offset in the range) for every part the range touches.
  template <class Fn>
  void for_parts(uint64_t offset, uint64_t size, Fn&& fn) const;
  std::vector<TensorSourcePtr> parts_;
  std::vector<uint64_t> starts_;
  uint64_t total_ = 0;
  uint64_t granularity_ = 1;  // the parts' common one, when every part is whole multiples of it
};

// Bytes [offset, offset + size) of `source`: a view where they lie in memory, else read into
// `scratch` (which keeps its capacity for the next call).
std::span<const uint8_t> view_or_read(const TensorSource& source, uint64_t offset, uint64_t size,
                                      std::vector<uint8_t>& scratch);

// The whole tensor in memory (reads through contiguous() when possible).
std::vector<uint8_t> read_all(const TensorSource& source);

// Streams a source to `sink` in chunks of at most `chunk_bytes`, on the calling thread.
void stream_source(const TensorSource& source, const std::function<void(std::span<const uint8_t>)>& sink,
                   uint64_t chunk_bytes = 16u << 20);

}  // namespace gptoss

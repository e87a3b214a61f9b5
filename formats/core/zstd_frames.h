#pragma once
// Files made of zstd frames, one after the other, so `zstd -d FILE` reads any of them as one
// stream: each record is compressed on its own (records compress and decompress in parallel, and
// a reader holds one record at a time), and a reader walks the frames of a mapped file checking
// every size before it trusts it. Every frame carries zstd's content checksum and its content size.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "formats/core/mapped_file.h"

namespace gptoss {

// One complete zstd frame of `bytes` (level as zstd's -1 .. 19; content size and checksum set).
// Safe to call from several threads at once (a compression context per thread).
std::vector<uint8_t> zstd_compress_frame(std::span<const uint8_t> bytes, int level);

// The frames of a mapped file in order. Every error is a FormatError naming the file, the field
// the caller is reading and the frame's byte offset.
class ZstdFrameReader {
 public:
  explicit ZstdFrameReader(std::shared_ptr<const MappedFile> file);

  struct Frame {
    std::span<const uint8_t> bytes;  // the compressed frame
    uint64_t offset = 0;             // of its first byte in the file
    uint64_t content_size = 0;       // from its header
  };
  bool at_end() const { return offset_ == file_->size(); }
  uint64_t offset() const { return offset_; }
  // The next frame (complete, with a content size of at most `max_content_size`); advances past it.
  Frame next(std::string_view field, uint64_t max_content_size);
  // Decompresses `frame` into `out`, whose size must be the frame's content size exactly.
  void decompress(const Frame& frame, std::span<uint8_t> out, std::string_view field) const;
  std::vector<uint8_t> decompress(const Frame& frame, std::string_view field) const;
  const MappedFile& file() const { return *file_; }

 private:
  std::shared_ptr<const MappedFile> file_;
  uint64_t offset_ = 0;
};

}  // namespace gptoss

#pragma once
// Read-only memory-mapped input files. Every view into the file goes through slice(), which
// checks the range against the file size first and reports the field that asked for it.
//
// A file that another process truncates while it is mapped would make the next access past its
// new end raise SIGBUS. Every mapping is registered with a process-wide SIGBUS handler instead:
// a fault inside a registered mapping replaces the pages from the fault to the end of the mapping
// with zeros, marks the file as shrunk and lets the access continue. The zeros never reach an
// output: MappedSource::read, AtomicFileWriter::commit, load_model and the checksum loops call
// check_intact() / throw_if_shrunk_since(), which throw a FormatError naming the file. The hot
// path pays nothing (no per-access check, one atomic load per chunk). See docs/robustness.md.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gptoss {

class MappedFile {
 public:
  // Maps the whole file; throws FormatError naming the file when it cannot be opened.
  static std::shared_ptr<const MappedFile> open(const std::filesystem::path& path);
  // An in-memory image with a name for messages (tests, fuzzers, embedded data).
  static std::shared_ptr<const MappedFile> from_bytes(std::vector<uint8_t> bytes, std::string name);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }
  bool is_mapped() const { return mapped_; }  // false for from_bytes() images
  std::span<const uint8_t> bytes() const { return {data_, static_cast<size_t>(size_)}; }

  // [offset, offset+size) of the file, or a FormatError naming `field` when it is out of range.
  std::span<const uint8_t> slice(uint64_t offset, uint64_t size, std::string_view field) const;

  // Read-ahead for a range of this file's bytes about to be read: the kernel fetches the pages
  // and maps them (MADV_POPULATE_READ; MADV_WILLNEED where the kernel lacks it) on the calling
  // thread, so the reader does not fault on them. No-op for in-memory images.
  void will_need(std::span<const uint8_t> range) const;
  // Drops the whole pages inside a range of this file's bytes from the process (MADV_DONTNEED:
  // they stay in the page cache), so reading a large file does not grow the resident set to its
  // size. No-op for in-memory images, where it would zero the bytes.
  void release(std::span<const uint8_t> range) const;

  // True once an access faulted because the file shrank after it was mapped (one atomic load).
  bool shrank() const;
  // FormatError "file shrank while being read" naming the file when shrank() or when the file
  // is now shorter than its mapping (a truncation inside the last page never faults).
  void check_intact() const;

  // A counter of shrink events in this process (any mapped file). Take it before a piece of
  // work, pass it to throw_if_shrunk_since() after: a FormatError names a file that shrank.
  static uint64_t shrink_events();
  static void throw_if_shrunk_since(uint64_t events);

 private:
  MappedFile() = default;
  std::string path_;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  bool mapped_ = false;
  int fd_ = -1;          // kept open to notice truncation that never faults (fstat)
  int guard_slot_ = -1;  // index in the SIGBUS guard's table, -1 when not guarded
  std::vector<uint8_t> owned_;
};

// A little-endian cursor over bytes of one file. Reads past the end throw FormatError with the
// field name and the absolute file offset of the read.
class ByteReader {
 public:
  ByteReader(std::span<const uint8_t> bytes, std::string file, uint64_t base_offset = 0)
      : bytes_(bytes), file_(std::move(file)), base_(base_offset) {}

  uint64_t position() const { return pos_; }            // relative to the span
  uint64_t file_offset() const { return base_ + pos_; }  // absolute in the file
  uint64_t remaining() const { return bytes_.size() - pos_; }
  const std::string& file() const { return file_; }
  void seek(uint64_t pos, std::string_view field);

  uint8_t u8(std::string_view field);
  uint16_t u16(std::string_view field);
  uint32_t u32(std::string_view field);
  uint64_t u64(std::string_view field);
  int8_t i8(std::string_view field) { return static_cast<int8_t>(u8(field)); }
  int16_t i16(std::string_view field) { return static_cast<int16_t>(u16(field)); }
  int32_t i32(std::string_view field) { return static_cast<int32_t>(u32(field)); }
  int64_t i64(std::string_view field) { return static_cast<int64_t>(u64(field)); }
  float f32(std::string_view field);
  double f64(std::string_view field);
  std::span<const uint8_t> bytes(uint64_t count, std::string_view field);
  std::string_view string_view(uint64_t count, std::string_view field);

  [[noreturn]] void fail(std::string_view field, const std::string& message) const;
  [[noreturn]] void fail_at(uint64_t relative_offset, std::string_view field, const std::string& message) const;

 private:
  std::span<const uint8_t> bytes_;
  std::string file_;
  uint64_t base_;
  uint64_t pos_ = 0;
};

// Little-endian helpers for writers and in-memory decoding.
inline uint16_t load_u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
inline uint32_t load_u32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}
inline uint64_t load_u64(const uint8_t* p) { return load_u32(p) | (static_cast<uint64_t>(load_u32(p + 4)) << 32); }
inline void store_u16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}
inline void store_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline void store_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

}  // namespace gptoss

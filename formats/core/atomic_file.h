#pragma once
// Output files appear only when complete: bytes go to a temp file beside the target, which is
// fsync'd and renamed over the target by commit(). Destroying an uncommitted writer removes the
// temp file, so an error or exception never leaves a partial output behind.
//
// Interruptions: every live temp file is listed in a process-wide table. A program that calls
// remove_temp_files_on_signals() has them unlinked when SIGINT, SIGTERM or SIGHUP arrives (then
// dies of that signal as before). A process killed outright (SIGKILL, power loss) leaves its
// temp file behind; the next writer for the same target removes every `.NAME.tmp-PID-*` whose
// process is gone. commit() refuses to publish an output while an input file it may have read
// from shrank (see MappedFile), and write errors name the cause (disk full, file size limit).
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace gptoss {

class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::filesystem::path target, size_t buffer_bytes = 8u << 20);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(std::span<const uint8_t> bytes);
  void write(const void* data, size_t size) { write({static_cast<const uint8_t*>(data), size}); }
  void write_zeros(uint64_t count);
  void pad_to(uint64_t alignment);  // zero bytes up to the next multiple of `alignment`
  void write_u8(uint8_t v) { write(&v, 1); }
  void write_u16(uint16_t v);
  void write_u32(uint32_t v);
  void write_u64(uint64_t v);
  void write_f32(float v);

  uint64_t position() const { return position_; }
  const std::filesystem::path& target() const { return target_; }
  const std::filesystem::path& temp_path() const { return temp_; }

  // Flush, fsync, rename over the target, fsync the folder. After this the writer is closed.
  void commit();
  // Drop the temp file without touching the target.
  void abandon();

 private:
  void flush_buffer();
  [[noreturn]] void fail(const std::string& what, int err);

  std::filesystem::path target_;
  std::filesystem::path temp_;
  int fd_ = -1;
  int live_slot_ = -1;          // entry in the table of live temp files, -1 when not listed
  uint64_t shrink_events_ = 0;  // MappedFile::shrink_events() when the writer was created
  std::vector<uint8_t> buffer_;
  size_t buffered_ = 0;
  uint64_t position_ = 0;
};

// Installs handlers for SIGINT, SIGTERM and SIGHUP that unlink every live temp file of this
// process and then let the signal take its previous effect, and ignores SIGXFSZ so that hitting
// a file-size limit is a write error (EFBIG) with a clear message instead of a silent kill.
// For programs (the CLIs); call it once at start-up.
void remove_temp_files_on_signals();

// Removes `.NAME.tmp-PID-XXXXXXXX` files beside `target` left by processes that no longer run.
// Returns how many were removed. AtomicFileWriter calls it before creating its temp file.
size_t remove_stale_temp_files(const std::filesystem::path& target);

}  // namespace gptoss

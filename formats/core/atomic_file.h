#pragma once
// Output files appear only when complete: bytes go to a temp file beside the target, which is
// fsync'd and renamed over the target by commit(). Destroying an uncommitted writer removes the
// temp file, so an error or exception never leaves a partial output behind. Writes of 1 MiB and
// more go straight to the file; writeback to the disk is started every 64 MiB as the file grows
// (sync_file_range, not waited for); the one fsync comes at the end.
//
// Interruptions: every live temp file is listed in a process-wide table. A program that calls
// remove_temp_files_on_signals() has them unlinked when SIGINT, SIGTERM or SIGHUP arrives (then
// dies of that signal as before). A process killed outright (SIGKILL, power loss) leaves its
// temp file behind; the next writer for the same target removes every `.NAME.tmp-PID-*` whose
// process is gone. commit() refuses to publish an output while an input file it may have read
// from shrank (see MappedFile), and write errors name the cause (disk full, file size limit).
//
// Outputs made of several files: a set of files (a split GGUF) is written completely, each file
// finished (fsync'd) but unrenamed, then renamed in one go by commit_together(); a folder (a
// sharded safetensors checkpoint) is written into a temp sibling folder by AtomicDirectory and
// put in place by one rename. Temp folders are listed, removed on signals and swept like files.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
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
  // Flush, fsync and close the temp file, which stays listed and is not renamed yet: commit()
  // then only renames. For files that must appear together (commit_together).
  void finish();
  // Drop the temp file without touching the target.
  void abandon();

 private:
  static constexpr size_t kDirectWriteBytes = 1u << 20;         // larger writes skip the buffer
  static constexpr uint64_t kWritebackStepBytes = 64ull << 20;  // start writeback every 64 MiB
  void write_fully(const uint8_t* data, size_t size);
  void flush_buffer();
  [[noreturn]] void fail(const std::string& what, int err);

  std::filesystem::path target_;
  std::filesystem::path temp_;
  int fd_ = -1;
  bool finished_ = false;       // finish() ran: the temp file is complete and closed
  int live_slot_ = -1;          // entry in the table of live temp files, -1 when not listed
  uint64_t shrink_events_ = 0;  // MappedFile::shrink_events() when the writer was created
  std::vector<uint8_t> buffer_;
  size_t buffered_ = 0;
  uint64_t position_ = 0;
  uint64_t written_ = 0;         // bytes handed to the kernel
  uint64_t writeback_from_ = 0;  // start of the bytes whose writeback was not started yet
};

// A small file (a JSON, a text) written whole through an AtomicFileWriter.
void write_file_atomically(const std::filesystem::path& target, std::string_view text);

// Finishes every writer, then renames them all with SIGINT/SIGTERM/SIGHUP held, so a set of
// files (a split GGUF) is published only once every file is complete, and an interrupting
// signal finds either no file of the new set in place or all of them. (Only SIGKILL or a power
// loss during the renames themselves, a few system calls, can leave a mix.)
void commit_together(const std::vector<std::unique_ptr<AtomicFileWriter>>& writers);

// A folder output that appears only when complete. Files are written into path(), a temp folder
// `.NAME.tmp-PID-XXXXXXXX` beside the target (listed like a temp file: removed on signals by
// remove_temp_files_on_signals, swept when its process is gone); commit() puts it in place with
// one rename. An existing target folder is swapped out atomically (renameat2 RENAME_EXCHANGE)
// and then deleted; its files that the new output does not write and that `replaced_by_output`
// does not claim (e.g. a tokenizer.json a user put there) are kept, hard-linked into the new
// folder first. A target holding subfolders is refused (by the constructor, and again by
// commit()) rather than deleted.
class AtomicDirectory {
 public:
  using NamePredicate = std::function<bool(const std::string& file_name)>;
  explicit AtomicDirectory(std::filesystem::path target, NamePredicate replaced_by_output = {});
  ~AtomicDirectory();
  AtomicDirectory(const AtomicDirectory&) = delete;
  AtomicDirectory& operator=(const AtomicDirectory&) = delete;

  const std::filesystem::path& path() const { return staging_; }  // write the files here
  const std::filesystem::path& target() const { return target_; }
  void commit();
  void abandon();  // removes the staging folder; the target is untouched

 private:
  void refuse_subfolders() const;
  void keep_files_of_the_old_target();
  std::filesystem::path target_;
  std::filesystem::path staging_;
  NamePredicate replaced_by_output_;
  int live_slot_ = -1;
  bool open_ = false;
  uint64_t shrink_events_ = 0;
};

// Installs handlers for SIGINT, SIGTERM and SIGHUP that unlink every live temp file of this
// process and then let the signal take its previous effect, and ignores SIGXFSZ so that hitting
// a file-size limit is a write error (EFBIG) with a clear message instead of a silent kill.
// For programs (the CLIs); call it once at start-up.
void remove_temp_files_on_signals();

// Removes `.NAME.tmp-PID-XXXXXXXX` files and folders beside `target` left by processes that no
// longer run.
// Returns how many were removed. AtomicFileWriter calls it before creating its temp file.
size_t remove_stale_temp_files(const std::filesystem::path& target);

}  // namespace gptoss

#include "formats/core/atomic_file.h"

#include <fcntl.h>  // sync_file_range
#include <signal.h>
#include <stdio.h>  // renameat2
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string_view>

#include "formats/core/error.h"
#include "formats/core/mapped_file.h"

namespace gptoss {
namespace {

// Temp files and folders of this process that a signal handler must remove: each entry is a
// malloc'd path (a folder's ends with '/') or null. A slot is claimed with a compare-exchange and emptied with an exchange, by the writer
// or by the handler, whichever comes first; the one that empties it owns the string.
constexpr size_t kLiveTempSlots = 256;
constexpr int kCleanupSignals[3] = {SIGINT, SIGTERM, SIGHUP};
std::array<std::atomic<char*>, kLiveTempSlots> g_live_temps{};

int list_live_temp(const std::filesystem::path& temp, bool is_folder = false) {
  char* copy = ::strdup((temp.string() + (is_folder ? "/" : "")).c_str());
  if (!copy) return -1;
  for (size_t i = 0; i < kLiveTempSlots; ++i) {
    char* expected = nullptr;
    if (g_live_temps[i].compare_exchange_strong(expected, copy)) return static_cast<int>(i);
  }
  std::free(copy);  // table full: this temp file is only removed by the normal paths
  return -1;
}

void unlist_live_temp(int& slot) {
  if (slot < 0) return;
  std::free(g_live_temps[static_cast<size_t>(slot)].exchange(nullptr));
  slot = -1;
}

bool is_live_temp(const std::filesystem::path& path) {
  for (auto& entry : g_live_temps) {
    const char* p = entry.load();
    if (!p) continue;
    std::string_view listed(p);
    if (listed.ends_with('/')) listed.remove_suffix(1);
    if (path.native() == listed) return true;
  }
  return false;
}

// Empties a temp folder (flat: only files, as AtomicDirectory's callers write them) and removes
// it, with system calls only, so that a signal handler may call it.
void remove_flat_folder(const char* path) {
  for (int pass = 0; pass < 8; ++pass) {  // entries unlinked while listing may hide others: retry
    const int dfd = ::open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) return;
    alignas(8) char entries[4096];
    long n;
    while ((n = ::syscall(SYS_getdents64, dfd, entries, sizeof entries)) > 0) {
      // struct linux_dirent64: u64 inode, s64 offset, u16 record length, u8 type, name.
      for (long at = 0; at < n;) {
        uint16_t record_length;
        std::memcpy(&record_length, entries + at + 16, sizeof record_length);
        const char* name = entries + at + 19;
        if (std::strcmp(name, ".") != 0 && std::strcmp(name, "..") != 0) ::unlinkat(dfd, name, 0);
        at += record_length;
      }
    }
    ::close(dfd);
    if (::rmdir(path) == 0 || errno != ENOTEMPTY) return;
  }
}

// Holds SIGINT/SIGTERM/SIGHUP for the life of the object: a handler must not run between two
// steps that only make sense together (creating a temp file and listing it, renaming a set).
class CleanupSignalsHeld {
 public:
  CleanupSignalsHeld() {
    sigset_t held;
    sigemptyset(&held);
    for (int sig : kCleanupSignals) sigaddset(&held, sig);
    ::pthread_sigmask(SIG_BLOCK, &held, &previous_);
  }
  ~CleanupSignalsHeld() { ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
  CleanupSignalsHeld(const CleanupSignalsHeld&) = delete;
  CleanupSignalsHeld& operator=(const CleanupSignalsHeld&) = delete;

 private:
  sigset_t previous_;
};

// `.NAME.tmp-PID-XXXXXXXX` beside the target: the pattern remove_stale_temp_files recognizes.
std::filesystem::path temp_name_for(const std::filesystem::path& target, std::random_device& rd) {
  std::filesystem::path dir = target.parent_path();
  if (dir.empty()) dir = ".";
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, ".tmp-%d-%08x", static_cast<int>(::getpid()), rd());
  return dir / ("." + target.filename().string() + suffix);
}

void fsync_folder(const std::filesystem::path& path) {
  std::filesystem::path dir = path.empty() ? std::filesystem::path(".") : path;
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

struct sigaction g_previous_actions[3] = {};

void on_terminating_signal(int signal_number) {
  const int saved_errno = errno;
  // Files first, then the folders that may hold them. The strings are leaked on purpose: the
  // process is ending.
  for (auto& entry : g_live_temps) {
    char* path = entry.load();
    if (path && path[std::strlen(path) - 1] != '/' && entry.compare_exchange_strong(path, nullptr)) ::unlink(path);
  }
  for (auto& entry : g_live_temps)
    if (char* path = entry.exchange(nullptr)) remove_flat_folder(path);
  for (size_t i = 0; i < 3; ++i) {
    if (kCleanupSignals[i] != signal_number) continue;
    const struct sigaction& previous = g_previous_actions[i];
    ::sigaction(signal_number, &previous, nullptr);
    if (previous.sa_handler == SIG_DFL) {
      ::raise(signal_number);  // delivered when this handler returns: the process dies of it
    } else if (previous.sa_handler != SIG_IGN && !(previous.sa_flags & SA_SIGINFO)) {
      previous.sa_handler(signal_number);
    }
  }
  errno = saved_errno;
}

std::string errno_reason(int err) {
  switch (err) {
    case ENOSPC: return "no space left on device (disk full); the previous output, if any, is untouched";
    case EDQUOT: return "disk quota exceeded; the previous output, if any, is untouched";
    case EFBIG: return "file too large (the file-size limit was reached); the previous output, if any, is untouched";
    default: return std::strerror(err);
  }
}

}  // namespace

void remove_temp_files_on_signals() {
  struct sigaction action {};
  action.sa_handler = on_terminating_signal;
  sigemptyset(&action.sa_mask);
  for (size_t i = 0; i < 3; ++i) ::sigaction(kCleanupSignals[i], &action, &g_previous_actions[i]);
  ::signal(SIGXFSZ, SIG_IGN);
}

size_t remove_stale_temp_files(const std::filesystem::path& target) {
  std::filesystem::path dir = target.parent_path();
  if (dir.empty()) dir = ".";
  const std::string prefix = "." + target.filename().string() + ".tmp-";
  size_t removed = 0;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    // PID-XXXXXXXX: decimal pid, a dash, 8 hex digits.
    const std::string rest = name.substr(prefix.size());
    const size_t dash = rest.find('-');
    if (dash == 0 || dash == std::string::npos || rest.size() - dash - 1 != 8) continue;
    if (rest.find_first_not_of("0123456789") != dash) continue;
    if (rest.find_first_not_of("0123456789abcdef", dash + 1) != std::string::npos) continue;
    if (dash > 9) continue;
    const long pid = std::strtol(rest.c_str(), nullptr, 10);
    if (pid <= 0) continue;
    const bool ours = pid == static_cast<long>(::getpid());
    const bool alive = ours ? is_live_temp(it->path()) : (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH);
    if (alive) continue;
    std::error_code remove_error;
    if (it->is_directory(remove_error) && !it->is_symlink(remove_error)) {
      if (std::filesystem::remove_all(it->path(), remove_error) > 0 && !remove_error) ++removed;
    } else if (::unlink(it->path().c_str()) == 0) {
      ++removed;
    }
  }
  return removed;
}

AtomicFileWriter::AtomicFileWriter(std::filesystem::path target, size_t buffer_bytes)
    : target_(std::move(target)), buffer_(buffer_bytes) {
  shrink_events_ = MappedFile::shrink_events();
  remove_stale_temp_files(target_);
  std::random_device rd;
  int open_error = EEXIST;
  {
    // A signal between creating the temp file and listing it would leave it behind.
    CleanupSignalsHeld held;
    for (int attempt = 0; attempt < 16 && fd_ < 0 && open_error == EEXIST; ++attempt) {
      temp_ = temp_name_for(target_, rd);
      fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd_ < 0) open_error = errno;
    }
    if (fd_ >= 0) live_slot_ = list_live_temp(temp_);
  }
  if (fd_ < 0 && open_error != EEXIST) fail("cannot create temp file " + temp_.string(), open_error);
  if (fd_ < 0) fail("cannot create a unique temp file", EEXIST);
}

AtomicFileWriter::~AtomicFileWriter() { abandon(); }

void write_file_atomically(const std::filesystem::path& target, std::string_view text) {
  AtomicFileWriter out(target);
  out.write(text.data(), text.size());
  out.commit();
}

void AtomicFileWriter::abandon() {
  if (fd_ >= 0 || finished_) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    finished_ = false;
    ::unlink(temp_.c_str());
    unlist_live_temp(live_slot_);
  }
}

void AtomicFileWriter::fail(const std::string& what, int err) {
  abandon();
  // A write straight from a mapping that shrank under us fails with EFAULT: say so.
  if (err == EFAULT) MappedFile::throw_if_shrunk_since(shrink_events_);
  throw_format_error(target_.string(), "", std::nullopt, what + ": " + errno_reason(err));
}

void AtomicFileWriter::write_fully(const uint8_t* data, size_t size) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::write(fd_, data + done, size - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write failed", errno);
    }
    done += static_cast<size_t>(n);
  }
  written_ += size;
  // Have the kernel start writing what we wrote to the disk now, without waiting for it, so the
  // disk works while we compute and the one fsync at the end finds little left to do (otherwise
  // writeback starts only once gigabytes are dirty). Errors surface at that fsync.
  if (written_ - writeback_from_ >= kWritebackStepBytes) {
    ::sync_file_range(fd_, static_cast<off_t>(writeback_from_), static_cast<off_t>(written_ - writeback_from_),
                      SYNC_FILE_RANGE_WRITE);
    writeback_from_ = written_;
  }
}

void AtomicFileWriter::flush_buffer() {
  write_fully(buffer_.data(), buffered_);
  buffered_ = 0;
}

void AtomicFileWriter::write(std::span<const uint8_t> bytes) {
  if (fd_ < 0) throw_format_error(target_.string(), "", std::nullopt, "write after the file was closed");
  if (bytes.empty()) return;  // an empty span may have a null data(): memcpy from null is undefined
  position_ += bytes.size();
  if (bytes.size() >= std::min(kDirectWriteBytes, buffer_.size())) {  // large: no copy through the buffer
    flush_buffer();
    write_fully(bytes.data(), bytes.size());
    return;
  }
  if (buffered_ + bytes.size() > buffer_.size()) flush_buffer();
  std::memcpy(buffer_.data() + buffered_, bytes.data(), bytes.size());
  buffered_ += bytes.size();
}

void AtomicFileWriter::write_zeros(uint64_t count) {
  static const uint8_t zeros[4096] = {};
  while (count > 0) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(count, sizeof zeros));
    write(zeros, n);
    count -= n;
  }
}

void AtomicFileWriter::pad_to(uint64_t alignment) {
  uint64_t rem = position_ % alignment;
  if (rem) write_zeros(alignment - rem);
}

void AtomicFileWriter::write_u16(uint16_t v) {
  uint8_t b[2];
  store_u16(b, v);
  write(b, 2);
}
void AtomicFileWriter::write_u32(uint32_t v) {
  uint8_t b[4];
  store_u32(b, v);
  write(b, 4);
}
void AtomicFileWriter::write_u64(uint64_t v) {
  uint8_t b[8];
  store_u64(b, v);
  write(b, 8);
}
void AtomicFileWriter::write_f32(float v) { write_u32(std::bit_cast<uint32_t>(v)); }

void AtomicFileWriter::finish() {
  if (finished_) return;
  if (fd_ < 0) throw_format_error(target_.string(), "", std::nullopt, "commit after the file was closed");
  flush_buffer();
  if (::fsync(fd_) != 0) fail("fsync failed", errno);
  try {
    MappedFile::throw_if_shrunk_since(shrink_events_);  // never publish bytes read past a shrunk input's end
  } catch (...) {
    abandon();
    throw;
  }
  if (::close(fd_) != 0) {
    fd_ = -1;
    int err = errno;
    ::unlink(temp_.c_str());
    unlist_live_temp(live_slot_);
    throw_format_error(target_.string(), "", std::nullopt, "close failed: " + errno_reason(err));
  }
  fd_ = -1;
  finished_ = true;
  std::vector<uint8_t>().swap(buffer_);  // a set of finished writers waiting for their rename holds no buffers
}

void AtomicFileWriter::commit() {
  if (!finished_) finish();
  finished_ = false;
  if (::rename(temp_.c_str(), target_.c_str()) != 0) {
    int err = errno;
    ::unlink(temp_.c_str());
    unlist_live_temp(live_slot_);
    throw_format_error(target_.string(), "", std::nullopt, std::string("rename failed: ") + std::strerror(err));
  }
  unlist_live_temp(live_slot_);  // after the rename: a signal before it still removes the temp file
  fsync_folder(target_.parent_path());
}

void commit_together(const std::vector<std::unique_ptr<AtomicFileWriter>>& writers) {
  for (const auto& w : writers) w->finish();
  CleanupSignalsHeld held;
  for (const auto& w : writers) w->commit();
}

AtomicDirectory::AtomicDirectory(std::filesystem::path target, NamePredicate replaced_by_output)
    : replaced_by_output_(std::move(replaced_by_output)) {
  // "out/" and "out" are the same target; the temp folder is named after its last component.
  target_ = std::filesystem::absolute(target).lexically_normal();
  if (!target_.has_filename()) target_ = target_.parent_path();
  if (std::filesystem::is_symlink(target_)) target_ = std::filesystem::canonical(target_);  // replace what it points to
  std::error_code ec;
  if (std::filesystem::exists(target_, ec) && std::filesystem::equivalent(target_, std::filesystem::current_path(), ec))
    throw_format_error(target_.string(), "", std::nullopt,
                       "is the current folder, which an output folder replaces as a whole: name a folder to write");
  if (std::filesystem::exists(target_) && !std::filesystem::is_directory(target_))
    throw_format_error(target_.string(), "", std::nullopt, "exists and is not a folder");
  refuse_subfolders();  // before the conversion, not after it
  std::filesystem::create_directories(target_.parent_path());
  shrink_events_ = MappedFile::shrink_events();
  remove_stale_temp_files(target_);
  std::random_device rd;
  int mkdir_error = EEXIST;
  {
    CleanupSignalsHeld held;
    for (int attempt = 0; attempt < 16 && !open_ && mkdir_error == EEXIST; ++attempt) {
      staging_ = temp_name_for(target_, rd);
      if (::mkdir(staging_.c_str(), 0755) == 0) {
        open_ = true;
        live_slot_ = list_live_temp(staging_, /*is_folder=*/true);
      } else {
        mkdir_error = errno;
      }
    }
  }
  if (!open_)
    throw_format_error(target_.string(), "", std::nullopt, "cannot create temp folder " + staging_.string() + ": " +
                                                               errno_reason(mkdir_error));
}

AtomicDirectory::~AtomicDirectory() { abandon(); }

void AtomicDirectory::abandon() {
  if (!open_) return;
  open_ = false;
  std::error_code ignored;
  std::filesystem::remove_all(staging_, ignored);
  unlist_live_temp(live_slot_);
}

void AtomicDirectory::refuse_subfolders() const {
  std::error_code ec;
  if (!std::filesystem::is_directory(target_, ec)) return;
  for (const auto& entry : std::filesystem::directory_iterator(target_)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory() && !entry.is_symlink() && name.find(".tmp-") == std::string::npos)
      throw_format_error(target_.string(), "", std::nullopt,
                         "holds the folder \"" + name + "\", which replacing this output folder would delete: "
                         "move it away or write the output to another folder");
  }
}

// Hard-links into the staging folder every file of the existing target that the new output
// neither writes nor replaces, so that swapping the folders loses nothing but the old output.
void AtomicDirectory::keep_files_of_the_old_target() {
  refuse_subfolders();  // checked again: the folder may have changed during the conversion
  for (const auto& entry : std::filesystem::directory_iterator(target_)) {
    const std::string name = entry.path().filename().string();
    if (name.find(".tmp-") != std::string::npos) continue;  // a dead writer's temp file
    if (std::filesystem::exists(std::filesystem::symlink_status(staging_ / name))) continue;  // written anew
    if (replaced_by_output_ && replaced_by_output_(name)) continue;
    if (::linkat(AT_FDCWD, entry.path().c_str(), AT_FDCWD, (staging_ / name).c_str(), 0) != 0)
      std::filesystem::copy(entry.path(), staging_ / name, std::filesystem::copy_options::copy_symlinks);
  }
}

void AtomicDirectory::commit() {
  if (!open_) throw_format_error(target_.string(), "", std::nullopt, "commit after the folder was closed");
  try {
    MappedFile::throw_if_shrunk_since(shrink_events_);  // never publish bytes read past a shrunk input's end
    fsync_folder(staging_);
    const bool replacing = std::filesystem::exists(std::filesystem::symlink_status(target_));
    if (replacing) keep_files_of_the_old_target();
    // Exchange: the target is at every moment either the complete old folder or the complete
    // new one; the old one ends up at the staging path, still listed, and is deleted below.
    int err = 0;
    if (::rename(staging_.c_str(), target_.c_str()) != 0) err = errno;
    if (err == EEXIST || err == ENOTEMPTY) {
      err = ::renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, target_.c_str(), RENAME_EXCHANGE) == 0 ? 0 : errno;
      if (err == EINVAL || err == ENOSYS) {
        // A file system without RENAME_EXCHANGE: move the old folder aside first (a kill between
        // the two renames leaves no target, and the old folder in a temp folder the sweep removes).
        std::random_device rd;
        const auto aside = temp_name_for(target_, rd);
        err = ::rename(target_.c_str(), aside.c_str()) == 0 ? 0 : errno;
        if (err == 0) err = ::rename(staging_.c_str(), target_.c_str()) == 0 ? 0 : errno;
        if (err == 0) staging_ = aside;
      }
    }
    if (err != 0)
      throw_format_error(target_.string(), "", std::nullopt, "cannot move the finished folder into place: " +
                                                                 errno_reason(err));
    fsync_folder(target_.parent_path());
  } catch (...) {
    abandon();
    throw;
  }
  abandon();  // the staging path now holds the old folder (or nothing)
}

}  // namespace gptoss

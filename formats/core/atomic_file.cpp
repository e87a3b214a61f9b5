#include "formats/core/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>

#include "formats/core/error.h"
#include "formats/core/mapped_file.h"

namespace gptoss {
namespace {

// Temp files of this process that a signal handler must remove: each entry is a malloc'd path
// or null. A slot is claimed with a compare-exchange and emptied with an exchange, by the writer
// or by the handler, whichever comes first; the one that empties it owns the string.
constexpr size_t kLiveTempSlots = 256;
std::array<std::atomic<char*>, kLiveTempSlots> g_live_temps{};

int list_live_temp(const std::filesystem::path& temp) {
  char* copy = ::strdup(temp.c_str());
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
    if (p && path == p) return true;
  }
  return false;
}

struct sigaction g_previous_actions[3] = {};
constexpr int kCleanupSignals[3] = {SIGINT, SIGTERM, SIGHUP};

void on_terminating_signal(int signal_number) {
  const int saved_errno = errno;
  for (auto& entry : g_live_temps)
    if (char* path = entry.exchange(nullptr)) ::unlink(path);  // leaked on purpose: the process is ending
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
    if (::unlink(it->path().c_str()) == 0) ++removed;
  }
  return removed;
}

AtomicFileWriter::AtomicFileWriter(std::filesystem::path target, size_t buffer_bytes)
    : target_(std::move(target)), buffer_(buffer_bytes) {
  shrink_events_ = MappedFile::shrink_events();
  remove_stale_temp_files(target_);
  std::filesystem::path dir = target_.parent_path();
  if (dir.empty()) dir = ".";
  std::random_device rd;
  // A signal between creating the temp file and listing it would leave it behind: hold the
  // cleanup signals for those few instructions.
  sigset_t cleanup_signals, previous_mask;
  sigemptyset(&cleanup_signals);
  for (int sig : kCleanupSignals) sigaddset(&cleanup_signals, sig);
  ::pthread_sigmask(SIG_BLOCK, &cleanup_signals, &previous_mask);
  int open_error = EEXIST;
  for (int attempt = 0; attempt < 16 && fd_ < 0 && open_error == EEXIST; ++attempt) {
    char suffix[32];
    std::snprintf(suffix, sizeof suffix, ".tmp-%d-%08x", static_cast<int>(::getpid()), rd());
    temp_ = dir / ("." + target_.filename().string() + suffix);
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd_ < 0) open_error = errno;
  }
  if (fd_ >= 0) live_slot_ = list_live_temp(temp_);
  ::pthread_sigmask(SIG_SETMASK, &previous_mask, nullptr);
  if (fd_ < 0 && open_error != EEXIST) fail("cannot create temp file " + temp_.string(), open_error);
  if (fd_ < 0) fail("cannot create a unique temp file", EEXIST);
}

AtomicFileWriter::~AtomicFileWriter() { abandon(); }

void AtomicFileWriter::abandon() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
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

void AtomicFileWriter::flush_buffer() {
  size_t done = 0;
  while (done < buffered_) {
    ssize_t n = ::write(fd_, buffer_.data() + done, buffered_ - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write failed", errno);
    }
    done += static_cast<size_t>(n);
  }
  buffered_ = 0;
}

void AtomicFileWriter::write(std::span<const uint8_t> bytes) {
  if (fd_ < 0) throw_format_error(target_.string(), "", std::nullopt, "write after the file was closed");
  if (bytes.empty()) return;  // an empty span may have a null data(): memcpy from null is undefined
  position_ += bytes.size();
  if (bytes.size() >= buffer_.size()) {
    flush_buffer();
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        fail("write failed", errno);
      }
      done += static_cast<size_t>(n);
    }
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

void AtomicFileWriter::commit() {
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
  if (::rename(temp_.c_str(), target_.c_str()) != 0) {
    int err = errno;
    ::unlink(temp_.c_str());
    unlist_live_temp(live_slot_);
    throw_format_error(target_.string(), "", std::nullopt, std::string("rename failed: ") + std::strerror(err));
  }
  unlist_live_temp(live_slot_);  // after the rename: a signal before it still removes the temp file
  std::filesystem::path dir = target_.parent_path();
  if (dir.empty()) dir = ".";
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace gptoss

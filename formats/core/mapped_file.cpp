#include "formats/core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <signal.h>

#include <array>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "formats/core/checked_math.h"
#include "formats/core/error.h"

namespace gptoss {
namespace {

// The SIGBUS guard. The handler may only touch lock-free atomics and make system calls; slots
// are claimed and released under g_guard_mutex in normal context. A slot is published by
// writing `end` last and retired by clearing `end` first, so the handler never sees a slot whose
// range is being set up.
struct GuardSlot {
  std::atomic<uintptr_t> begin{0};
  std::atomic<uintptr_t> end{0};
  std::atomic<bool> shrank{false};
};
constexpr size_t kGuardSlots = 1024;  // mappings alive at once; more are mapped unguarded
std::array<GuardSlot, kGuardSlots> g_slots;
std::array<std::string, kGuardSlots> g_slot_paths;  // guarded by g_guard_mutex
std::array<const MappedFile*, kGuardSlots> g_slot_files{};  // guarded by g_guard_mutex
std::atomic<uint64_t> g_shrink_events{0};
std::mutex g_guard_mutex;
std::vector<std::string> g_shrunk_history;  // files that shrank and are closed now (capped)
struct sigaction g_previous_sigbus {};
uintptr_t g_page_size = 4096;

void on_sigbus(int signal_number, siginfo_t* info, void* context) {
  const bool from_a_fault = info->si_code > 0;  // not sent with kill/raise/sigqueue
  const auto address = reinterpret_cast<uintptr_t>(info->si_addr);
  for (auto& slot : g_slots) {
    if (!from_a_fault) break;
    const uintptr_t begin = slot.begin.load(std::memory_order_acquire);
    const uintptr_t end = slot.end.load(std::memory_order_acquire);
    if (begin == 0 || address < begin || address >= end) continue;
    // Everything from the faulting page on lies past the file's new end: read it as zeros.
    const uintptr_t page = address & ~(g_page_size - 1);
    void* zeros = ::mmap(reinterpret_cast<void*>(page), end - page, PROT_READ,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (zeros == MAP_FAILED) break;
    slot.shrank.store(true, std::memory_order_release);
    g_shrink_events.fetch_add(1, std::memory_order_acq_rel);
    return;
  }
  // Not one of our mappings: behave as if we were not here.
  if ((g_previous_sigbus.sa_flags & SA_SIGINFO) && g_previous_sigbus.sa_sigaction) {
    g_previous_sigbus.sa_sigaction(signal_number, info, context);
  } else if (g_previous_sigbus.sa_handler != SIG_DFL && g_previous_sigbus.sa_handler != SIG_IGN) {
    g_previous_sigbus.sa_handler(signal_number);
  } else if (g_previous_sigbus.sa_handler == SIG_IGN && !from_a_fault) {
    return;  // a sent SIGBUS that was ignored before we came
  } else {
    ::signal(SIGBUS, SIG_DFL);  // a faulting access runs again and takes the default action
    if (!from_a_fault) ::raise(SIGBUS);
  }
}

void install_sigbus_guard() {
  static std::once_flag once;
  std::call_once(once, [] {
    g_page_size = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    struct sigaction action {};
    action.sa_sigaction = on_sigbus;
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGBUS, &action, &g_previous_sigbus);
  });
}

int register_mapping(const MappedFile* file, const uint8_t* data, uint64_t size, const std::string& path) {
  install_sigbus_guard();
  std::lock_guard lock(g_guard_mutex);
  for (size_t i = 0; i < kGuardSlots; ++i) {
    GuardSlot& slot = g_slots[i];
    if (slot.begin.load(std::memory_order_relaxed) != 0) continue;
    slot.shrank.store(false, std::memory_order_relaxed);
    slot.begin.store(reinterpret_cast<uintptr_t>(data), std::memory_order_release);
    slot.end.store(reinterpret_cast<uintptr_t>(data) + size, std::memory_order_release);
    g_slot_paths[i] = path;
    g_slot_files[i] = file;
    return static_cast<int>(i);
  }
  return -1;
}

void unregister_mapping(int index) {
  std::lock_guard lock(g_guard_mutex);
  GuardSlot& slot = g_slots[static_cast<size_t>(index)];
  slot.end.store(0, std::memory_order_release);
  slot.begin.store(0, std::memory_order_release);
  if (slot.shrank.load(std::memory_order_acquire) && g_shrunk_history.size() < 64)
    g_shrunk_history.push_back(g_slot_paths[static_cast<size_t>(index)]);
  g_slot_paths[static_cast<size_t>(index)].clear();
  g_slot_files[static_cast<size_t>(index)] = nullptr;
}

bool now_shorter_than(int fd, uint64_t mapped_size) {
  struct stat st {};
  return fd >= 0 && ::fstat(fd, &st) == 0 && static_cast<uint64_t>(st.st_size) < mapped_size;
}

[[noreturn]] void throw_shrunk(const std::string& path, uint64_t mapped_size) {
  std::string message = "file shrank while being read";
  if (mapped_size) message += " (it had " + std::to_string(mapped_size) + " bytes when it was opened)";
  message += ": another program truncated or rewrote it; nothing was written from it";
  throw_format_error(path, "", std::nullopt, message);
}

}  // namespace

std::shared_ptr<const MappedFile> MappedFile::open(const std::filesystem::path& path) {
  std::shared_ptr<MappedFile> file(new MappedFile());
  file->path_ = path.string();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_format_error(file->path_, "", std::nullopt, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    throw_format_error(file->path_, "", std::nullopt, std::string("cannot stat: ") + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw_format_error(file->path_, "", std::nullopt, "not a regular file");
  }
  file->size_ = static_cast<uint64_t>(st.st_size);
  if (file->size_ > 0) {
    void* p = ::mmap(nullptr, file->size_, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      throw_format_error(file->path_, "", std::nullopt, std::string("cannot map: ") + std::strerror(err));
    }
    file->data_ = static_cast<const uint8_t*>(p);
    file->mapped_ = true;
    file->guard_slot_ = register_mapping(file.get(), file->data_, file->size_, file->path_);
    file->fd_ = fd;
    return file;
  }
  ::close(fd);
  return file;
}

std::shared_ptr<const MappedFile> MappedFile::from_bytes(std::vector<uint8_t> bytes, std::string name) {
  std::shared_ptr<MappedFile> file(new MappedFile());
  file->path_ = std::move(name);
  file->owned_ = std::move(bytes);
  file->data_ = file->owned_.data();
  file->size_ = file->owned_.size();
  return file;
}

MappedFile::~MappedFile() {
  if (guard_slot_ >= 0) unregister_mapping(guard_slot_);
  if (mapped_) ::munmap(const_cast<uint8_t*>(data_), size_);
  if (fd_ >= 0) ::close(fd_);
}

bool MappedFile::shrank() const {
  return guard_slot_ >= 0 && g_slots[static_cast<size_t>(guard_slot_)].shrank.load(std::memory_order_acquire);
}

void MappedFile::check_intact() const {
  if (shrank() || now_shorter_than(fd_, size_)) throw_shrunk(path_, size_);
}

uint64_t MappedFile::shrink_events() { return g_shrink_events.load(std::memory_order_acquire); }

void MappedFile::throw_if_shrunk_since(uint64_t events) {
  std::string path;
  uint64_t mapped_size = 0;
  {
    std::lock_guard lock(g_guard_mutex);
    const bool faulted = g_shrink_events.load(std::memory_order_acquire) != events;
    // Live mappings: one that faulted, or one whose file is now shorter without having faulted.
    for (size_t i = 0; i < kGuardSlots && path.empty(); ++i) {
      const MappedFile* file = g_slot_files[i];
      if (!file) continue;
      if ((faulted && g_slots[i].shrank.load(std::memory_order_acquire)) || now_shorter_than(file->fd_, file->size_)) {
        path = g_slot_paths[i];
        mapped_size = file->size_;
      }
    }
    if (path.empty() && faulted) path = g_shrunk_history.empty() ? "an input file" : g_shrunk_history.back();
  }
  if (!path.empty()) throw_shrunk(path, mapped_size);
}

std::span<const uint8_t> MappedFile::slice(uint64_t offset, uint64_t size, std::string_view field) const {
  auto end = checked_add(offset, size);
  if (!end || *end > size_)
    throw_format_error(path_, std::string(field), offset,
                       "range of " + std::to_string(size) + " bytes runs past the end of the file (" +
                           std::to_string(size_) + " bytes)");
  return {data_ + offset, static_cast<size_t>(size)};
}

void MappedFile::will_need(std::span<const uint8_t> range) const {
  if (!mapped_ || range.empty()) return;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(range.data()) / g_page_size * g_page_size;
  const uintptr_t end = reinterpret_cast<uintptr_t>(range.data()) + range.size();
#ifdef MADV_POPULATE_READ
  if (::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_READ) == 0) return;
#endif
  ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_WILLNEED);
}

void MappedFile::release(std::span<const uint8_t> range) const {
  if (!mapped_ || range.empty()) return;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(range.data()) + g_page_size - 1) / g_page_size * g_page_size;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(range.data()) + range.size()) / g_page_size * g_page_size;
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

void ByteReader::seek(uint64_t pos, std::string_view field) {
  if (pos > bytes_.size()) fail_at(pos, field, "offset is past the end of the data");
  pos_ = pos;
}

void ByteReader::fail(std::string_view field, const std::string& message) const { fail_at(pos_, field, message); }

void ByteReader::fail_at(uint64_t relative_offset, std::string_view field, const std::string& message) const {
  throw_format_error(file_, std::string(field), base_ + relative_offset, message);
}

std::span<const uint8_t> ByteReader::bytes(uint64_t count, std::string_view field) {
  if (count > remaining())
    fail(field, "needs " + std::to_string(count) + " bytes but only " + std::to_string(remaining()) + " remain");
  auto out = bytes_.subspan(static_cast<size_t>(pos_), static_cast<size_t>(count));
  pos_ += count;
  return out;
}

std::string_view ByteReader::string_view(uint64_t count, std::string_view field) {
  auto b = bytes(count, field);
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

uint8_t ByteReader::u8(std::string_view field) { return bytes(1, field)[0]; }
uint16_t ByteReader::u16(std::string_view field) { return load_u16(bytes(2, field).data()); }
uint32_t ByteReader::u32(std::string_view field) { return load_u32(bytes(4, field).data()); }
uint64_t ByteReader::u64(std::string_view field) { return load_u64(bytes(8, field).data()); }
float ByteReader::f32(std::string_view field) { return std::bit_cast<float>(u32(field)); }
double ByteReader::f64(std::string_view field) { return std::bit_cast<double>(u64(field)); }

}  // namespace gptoss

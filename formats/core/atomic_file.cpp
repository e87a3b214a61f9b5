#include "formats/core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <random>

#include "formats/core/error.h"
#include "formats/core/mapped_file.h"

namespace gptoss {

AtomicFileWriter::AtomicFileWriter(std::filesystem::path target, size_t buffer_bytes)
    : target_(std::move(target)), buffer_(buffer_bytes) {
  std::filesystem::path dir = target_.parent_path();
  if (dir.empty()) dir = ".";
  std::random_device rd;
  for (int attempt = 0; attempt < 16 && fd_ < 0; ++attempt) {
    char suffix[32];
    std::snprintf(suffix, sizeof suffix, ".tmp-%d-%08x", static_cast<int>(::getpid()), rd());
    temp_ = dir / ("." + target_.filename().string() + suffix);
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd_ < 0 && errno != EEXIST) fail("cannot create temp file " + temp_.string(), errno);
  }
  if (fd_ < 0) fail("cannot create a unique temp file", EEXIST);
}

AtomicFileWriter::~AtomicFileWriter() { abandon(); }

void AtomicFileWriter::abandon() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
    ::unlink(temp_.c_str());
  }
}

void AtomicFileWriter::fail(const std::string& what, int err) {
  abandon();
  std::string reason = std::strerror(err);
  if (err == ENOSPC) reason = "no space left on device; the previous output, if any, is untouched";
  throw_format_error(target_.string(), "", std::nullopt, what + ": " + reason);
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
  if (::close(fd_) != 0) {
    fd_ = -1;
    int err = errno;
    ::unlink(temp_.c_str());
    throw_format_error(target_.string(), "", std::nullopt, std::string("close failed: ") + std::strerror(err));
  }
  fd_ = -1;
  if (::rename(temp_.c_str(), target_.c_str()) != 0) {
    int err = errno;
    ::unlink(temp_.c_str());
    throw_format_error(target_.string(), "", std::nullopt, std::string("rename failed: ") + std::strerror(err));
  }
  std::filesystem::path dir = target_.parent_path();
  if (dir.empty()) dir = ".";
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace gptoss

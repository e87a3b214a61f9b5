#include "formats/core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>

#include "formats/core/checked_math.h"
#include "formats/core/error.h"

namespace gptoss {

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
  if (mapped_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

std::span<const uint8_t> MappedFile::slice(uint64_t offset, uint64_t size, std::string_view field) const {
  auto end = checked_add(offset, size);
  if (!end || *end > size_)
    throw_format_error(path_, std::string(field), offset,
                       "range of " + std::to_string(size) + " bytes runs past the end of the file (" +
                           std::to_string(size_) + " bytes)");
  return {data_ + offset, static_cast<size_t>(size)};
}

void MappedFile::advise_sequential(uint64_t offset, uint64_t size) const {
  if (!mapped_ || size == 0) return;
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  uint64_t start = offset / page * page;
  ::madvise(const_cast<uint8_t*>(data_) + start, size + (offset - start), MADV_SEQUENTIAL | MADV_WILLNEED);
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

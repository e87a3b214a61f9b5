#include "convert/tensor_source.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace gptoss {
namespace {
void check_range(uint64_t offset, uint64_t count, uint64_t size) {
  if (offset > size || count > size - offset)
    throw std::out_of_range("tensor read of " + std::to_string(count) + " bytes at " + std::to_string(offset) +
                            " is outside its " + std::to_string(size) + " bytes");
}
}  // namespace

void MappedSource::read(uint64_t offset, std::span<uint8_t> out) const {
  check_range(offset, out.size(), bytes_.size());
  std::memcpy(out.data(), bytes_.data() + offset, out.size());
  if (file_ && file_->shrank()) file_->check_intact();  // the copy read zeros past the file's new end
}

void MappedSource::release_range(uint64_t offset, uint64_t size) const {
  // Only file-backed mappings: MADV_DONTNEED on anonymous memory would zero it. Whole pages
  // inside the range only, so a neighbour's partly read page is never dropped mid-use.
  if (!file_ || !file_->is_mapped() || offset >= bytes_.size()) return;
  size = std::min<uint64_t>(size, bytes_.size() - offset);
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t first = reinterpret_cast<uintptr_t>(bytes_.data() + offset);
  const uintptr_t begin = (first + page - 1) / page * page;
  const uintptr_t end = (first + size) / page * page;
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

void OwnedSource::read(uint64_t offset, std::span<uint8_t> out) const {
  check_range(offset, out.size(), bytes_.size());
  std::memcpy(out.data(), bytes_.data() + offset, out.size());
}

void RowSource::read(uint64_t offset, std::span<uint8_t> out) const {
  check_range(offset, out.size(), size());
  if (out.empty()) return;
  const uint64_t first = offset / row_bytes_;
  const uint64_t last = (offset + out.size() - 1) / row_bytes_;
  const uint64_t count = last - first + 1;
  const uint64_t head = offset - first * row_bytes_;
  if (head == 0 && out.size() == count * row_bytes_) {
    produce(first, count, out.data());
    return;
  }
  std::vector<uint8_t> rows(count * row_bytes_);
  produce(first, count, rows.data());
  std::memcpy(out.data(), rows.data() + head, out.size());
}

std::optional<std::span<const uint8_t>> SliceSource::contiguous() const {
  auto whole = parent_->contiguous();
  if (!whole) return std::nullopt;
  return whole->subspan(offset_, size_);
}

ConcatSource::ConcatSource(std::vector<TensorSourcePtr> parts) : parts_(std::move(parts)) {
  for (const auto& p : parts_) {
    starts_.push_back(total_);
    total_ += p->size();
  }
}

void ConcatSource::read(uint64_t offset, std::span<uint8_t> out) const {
  check_range(offset, out.size(), total_);
  uint64_t done = 0;
  for (size_t i = 0; i < parts_.size() && done < out.size(); ++i) {
    const uint64_t start = starts_[i], end = start + parts_[i]->size();
    const uint64_t pos = offset + done;
    if (pos >= end) continue;
    const uint64_t n = std::min<uint64_t>(end - pos, out.size() - done);
    parts_[i]->read(pos - start, out.subspan(done, n));
    done += n;
  }
}

std::vector<uint8_t> read_all(const TensorSource& source) {
  if (auto view = source.contiguous()) return {view->begin(), view->end()};
  std::vector<uint8_t> out(source.size());
  source.read(0, out);
  return out;
}

void stream_source(const TensorSource& source, const std::function<void(std::span<const uint8_t>)>& sink,
                   uint64_t chunk_bytes) {
  if (auto view = source.contiguous()) {
    for (uint64_t off = 0; off < view->size(); off += chunk_bytes) {
      const uint64_t n = std::min<uint64_t>(chunk_bytes, view->size() - off);
      sink(view->subspan(off, n));
      source.release_range(off, n);
    }
  } else {
    std::vector<uint8_t> buffer(std::min<uint64_t>(chunk_bytes, source.size()));
    for (uint64_t off = 0; off < source.size(); off += buffer.size()) {
      const uint64_t n = std::min<uint64_t>(buffer.size(), source.size() - off);
      source.read(off, std::span<uint8_t>(buffer.data(), n));
      sink(std::span<const uint8_t>(buffer.data(), n));
    }
  }
  source.release_pages();
}

}  // namespace gptoss

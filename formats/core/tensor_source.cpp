#include "formats/core/tensor_source.h"

#include <algorithm>
#include <cmath>
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

// The share of an input of `in_size` bytes that output bytes [offset, offset + size) of `out_size`
// come from. `outward` widens to cover every input byte involved (read-ahead); otherwise it keeps
// only bytes no other output range needs (releases).
std::pair<uint64_t, uint64_t> input_share(uint64_t offset, uint64_t size, uint64_t out_size, uint64_t in_size,
                                          bool outward) {
  if (out_size == 0 || in_size == 0) return {0, 0};
  const long double ratio = static_cast<long double>(in_size) / static_cast<long double>(out_size);
  const long double begin = static_cast<long double>(offset) * ratio;
  const long double end = static_cast<long double>(offset + size) * ratio;
  const auto clamp = [&](long double v) { return static_cast<uint64_t>(std::clamp<long double>(v, 0, in_size)); };
  const uint64_t b = clamp(outward ? std::floor(begin) : std::ceil(begin));
  const uint64_t e = clamp(outward ? std::ceil(end) : std::floor(end));
  return {b, e > b ? e - b : 0};
}
}  // namespace

void MappedSource::read(uint64_t offset, std::span<uint8_t> out) const {
  check_range(offset, out.size(), bytes_.size());
  std::memcpy(out.data(), bytes_.data() + offset, out.size());
  if (file_ && file_->shrank()) file_->check_intact();  // the copy read zeros past the file's new end
}

void MappedSource::will_need(uint64_t offset, uint64_t size) const {
  if (!file_ || offset >= bytes_.size()) return;
  file_->will_need(bytes_.subspan(offset, std::min<uint64_t>(size, bytes_.size() - offset)));
}

void MappedSource::release_range(uint64_t offset, uint64_t size) const {
  if (!file_ || offset >= bytes_.size()) return;
  file_->release(bytes_.subspan(offset, std::min<uint64_t>(size, bytes_.size() - offset)));
}

void OwnedSource::read(uint64_t offset, std::span<uint8_t> out) const {
  check_range(offset, out.size(), bytes_.size());
  std::memcpy(out.data(), bytes_.data() + offset, out.size());
}

void RowSource::read(uint64_t offset, std::span<uint8_t> out) const {
  check_range(offset, out.size(), size());
  if (out.empty()) return;
  const uint64_t rb = row_bytes_;
  uint64_t row = offset / rb;
  uint64_t done = 0;
  std::vector<uint8_t> partial;
  // A range that starts or ends inside a row: that row alone goes through a buffer, the whole
  // rows between are produced in place.
  auto partial_row = [&](uint64_t skip, uint64_t take) {
    partial.resize(rb);
    produce(row, 1, partial.data());
    std::memcpy(out.data() + done, partial.data() + skip, take);
    done += take;
    ++row;
  };
  if (const uint64_t head = offset - row * rb; head != 0) partial_row(head, std::min<uint64_t>(rb - head, out.size()));
  if (const uint64_t whole = (out.size() - done) / rb; whole > 0) {
    produce(row, whole, out.data() + done);
    done += whole * rb;
    row += whole;
  }
  if (done < out.size()) partial_row(0, out.size() - done);
}

void TransformRowSource::will_need(uint64_t offset, uint64_t size) const {
  for (const auto& in : inputs_) {
    const auto [at, n] = input_share(offset, size, this->size(), in->size(), true);
    if (n) in->will_need(at, n);
  }
}

void TransformRowSource::release_range(uint64_t offset, uint64_t size) const {
  for (const auto& in : inputs_) {
    const auto [at, n] = input_share(offset, size, this->size(), in->size(), false);
    if (n) in->release_range(at, n);
  }
}

std::optional<std::span<const uint8_t>> SliceSource::contiguous() const {
  auto whole = parent_->contiguous();
  if (!whole) return std::nullopt;
  return whole->subspan(offset_, size_);
}

uint64_t SliceSource::granularity() const {
  const uint64_t g = parent_->granularity();
  return offset_ % g == 0 && size_ % g == 0 ? g : 1;
}

ConcatSource::ConcatSource(std::vector<TensorSourcePtr> parts) : parts_(std::move(parts)) {
  for (const auto& p : parts_) {
    starts_.push_back(total_);
    total_ += p->size();
  }
  if (!parts_.empty()) granularity_ = parts_.front()->granularity();
  for (const auto& p : parts_)
    if (p->granularity() != granularity_ || p->size() % granularity_ != 0) granularity_ = 1;
}

template <class Fn>
void ConcatSource::for_parts(uint64_t offset, uint64_t size, Fn&& fn) const {
  // The first part that ends after `offset`, then on until the range is covered.
  size_t i = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), offset) - starts_.begin());
  i = i > 0 ? i - 1 : 0;
  for (uint64_t done = 0; i < parts_.size() && done < size; ++i) {
    const uint64_t start = starts_[i], end = start + parts_[i]->size();
    const uint64_t pos = offset + done;
    if (pos >= end) continue;
    const uint64_t n = std::min<uint64_t>(end - pos, size - done);
    fn(*parts_[i], pos - start, n, done);
    done += n;
  }
}

void ConcatSource::read(uint64_t offset, std::span<uint8_t> out) const {
  check_range(offset, out.size(), total_);
  for_parts(offset, out.size(), [&](const TensorSource& part, uint64_t at, uint64_t n, uint64_t done) {
    part.read(at, out.subspan(done, n));
  });
}

void ConcatSource::will_need(uint64_t offset, uint64_t size) const {
  for_parts(offset, std::min(size, total_ - std::min(offset, total_)),
            [](const TensorSource& part, uint64_t at, uint64_t n, uint64_t) { part.will_need(at, n); });
}

void ConcatSource::release_range(uint64_t offset, uint64_t size) const {
  for_parts(offset, std::min(size, total_ - std::min(offset, total_)),
            [](const TensorSource& part, uint64_t at, uint64_t n, uint64_t) { part.release_range(at, n); });
}

std::span<const uint8_t> view_or_read(const TensorSource& source, uint64_t offset, uint64_t size,
                                      std::vector<uint8_t>& scratch) {
  if (auto view = source.contiguous()) {
    check_range(offset, size, view->size());
    return view->subspan(offset, size);
  }
  scratch.resize(size);
  source.read(offset, scratch);
  return scratch;
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
      source.release_range(off, n);
    }
  }
  source.release_pages();
}

}  // namespace gptoss

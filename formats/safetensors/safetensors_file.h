#pragma once
// One safetensors file: validated on open with every rule of the official reader (see
// docs/formats.md and shared/specs/safetensors_hf.md section 1.4), plus rejecting duplicate
// tensor names and non-string __metadata__ values. Tensor data are zero-copy views of the map.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "formats/core/dtype.h"
#include "formats/core/mapped_file.h"
#include "formats/core/stored_tensor.h"

namespace gptoss {

struct SafetensorsTensor {
  std::string name;
  DType dtype;
  std::vector<uint64_t> shape;
  uint64_t begin = 0;  // relative to the data section
  uint64_t end = 0;
  uint64_t size() const { return end - begin; }
};

// A rule of the format that a header breaks: the field (e.g. `tensor "a".data_offsets`) and a sentence.
struct SafetensorsHeaderError {
  std::string field;
  std::string message;
  bool at_data_section = false;  // a rule about the data section rather than the header JSON
};

// The rules on a header's entries, the one function both sides use: the reader checks every
// header it reads with it and the writer every header before it writes anything, so the writer
// cannot emit a header the reader rejects. In order: names (none called __metadata__, the key of
// the metadata; each once; UTF-8) and the metadata's text (UTF-8) and dtypes (one safetensors
// has), then rules 8-13 of the official reader: offsets contiguous from 0 in data order (sorts
// `tensors` into it), each range the byte size of its dtype x shape, and the data section of
// `data_section_bytes` covered exactly. Returns the first rule broken.
std::optional<SafetensorsHeaderError> check_safetensors_header(std::vector<SafetensorsTensor>& tensors,
                                                               const std::map<std::string, std::string>& metadata,
                                                               uint64_t data_section_bytes);

class SafetensorsFile {
 public:
  static constexpr uint64_t kMaxHeaderSize = 100'000'000;

  static SafetensorsFile open(const std::filesystem::path& path);
  // Parses an in-memory image (used by tests and fuzzers); `name` is used in errors.
  static SafetensorsFile parse(std::shared_ptr<const MappedFile> file);

  const std::string& path() const { return file_->path(); }
  const std::shared_ptr<const MappedFile>& mapped() const { return file_; }
  uint64_t header_size() const { return header_size_; }
  uint64_t data_offset() const { return 8 + header_size_; }
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }  // in data order
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const SafetensorsTensor* find(std::string_view name) const;
  std::span<const uint8_t> data(const SafetensorsTensor& t) const;
  std::vector<StoredTensorRange> stored_tensors() const;  // in data order, absolute offsets

 private:
  std::shared_ptr<const MappedFile> file_;
  uint64_t header_size_ = 0;
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, size_t, std::less<>> index_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace gptoss

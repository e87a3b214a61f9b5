#pragma once
// One GGUF v2/v3 file, validated on open the way ggml's gguf.cpp does (and a little stricter):
// every count, length, dimension, type and offset is checked against the file before it is used,
// so a bad file gives a FormatError naming the field and byte offset, never a crash or a huge
// allocation. Tensor data are zero-copy views of the mapping.
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
#include "formats/gguf/gguf_value.h"

namespace gptoss {

inline constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as little-endian u32
inline constexpr uint32_t kGgufDefaultAlignment = 32;
inline constexpr uint32_t kGgufMaxDims = 4;
inline constexpr uint64_t kGgufMaxNameBytes = 63;            // ggml: GGML_MAX_NAME 64 incl. NUL
inline constexpr uint64_t kGgufMaxStringBytes = 1ull << 30;  // ggml's cap on one string
inline constexpr uint64_t kGgufMaxArrayCount = 1ull << 30;   // ggml's cap on one array

// Bytes of one tensor-info record: name length (u64), the name, n_dims (u32), ne (u64 each),
// type (u32) and data offset (u64, the record's last field).
constexpr uint64_t gguf_tensor_info_bytes(uint64_t name_bytes, uint64_t n_dims) {
  return 8 + name_bytes + 4 + 8 * n_dims + 4 + 8;
}

struct GgufKv {
  std::string key;
  GgufValue value;
  uint64_t offset = 0;  // file offset of the key's length field
};

struct GgufTensorInfo {
  std::string name;
  uint32_t ggml_type = 0;
  DType dtype = DType::F32;    // the DType of ggml_type (every ggml type the reader accepts has one)
  std::vector<uint64_t> ne;    // ne[0] innermost, n_dims entries
  uint64_t offset = 0;         // relative to the data section
  uint64_t size = 0;           // bytes, unpadded
  uint64_t info_offset = 0;    // file offset of the tensor-info record
  uint64_t elements() const;
  // File offsets of the end of the tensor-info record and of its data-offset field.
  uint64_t info_end() const { return info_offset + gguf_tensor_info_bytes(name.size(), ne.size()); }
  uint64_t offset_field() const { return info_end() - 8; }
  // numpy order (outermost first), i.e. ne reversed.
  std::vector<uint64_t> shape() const { return {ne.rbegin(), ne.rend()}; }
};

class GgufFile {
 public:
  static GgufFile open(const std::filesystem::path& path);
  static GgufFile parse(std::shared_ptr<const MappedFile> file);

  const std::string& path() const { return file_->path(); }
  const std::shared_ptr<const MappedFile>& mapped() const { return file_; }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }

  const std::vector<GgufKv>& kvs() const { return kvs_; }  // in file order
  const GgufKv* find(std::string_view key) const;
  // The value of `key` when it has type `type`; FormatError when it is missing or has another type.
  const GgufValue& require(std::string_view key, GgufType type) const;
  // Like require() but nullptr when absent (a present key of another type is still an error).
  const GgufValue* optional(std::string_view key, GgufType type) const;
  [[noreturn]] void fail(std::string_view field, std::optional<uint64_t> offset, const std::string& message) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }  // in data order
  const GgufTensorInfo* find_tensor(std::string_view name) const;
  std::span<const uint8_t> data(const GgufTensorInfo& tensor) const;
  std::vector<StoredTensorRange> stored_tensors() const;  // in data order, absolute offsets

 private:
  std::shared_ptr<const MappedFile> file_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kGgufDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<GgufKv> kvs_;
  std::map<std::string, size_t, std::less<>> kv_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

}  // namespace gptoss

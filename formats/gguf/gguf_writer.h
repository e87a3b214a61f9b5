#pragma once
// Streaming GGUF v3 writer. Metadata and tensor infos are small and built in memory; tensor data
// come from TensorSources through the ordered chunk pipeline (chunk_pipeline.h: produced on every
// core, written in order), so a file of any size needs bounded memory. Layout as
// ggml's own writers: infos in data order, offsets = running sum of aligned sizes, data start
// aligned, zero padding after every tensor including the last. Split sets
// (<stem>-00001-of-0000N.gguf with split.no / split.count / split.tensors.count) as gguf-split does.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "formats/core/chunk_pipeline.h"
#include "formats/core/tensor_source.h"
#include "formats/gguf/gguf_value.h"

namespace gptoss {

// Key-value pairs serialized as they are added (order is kept).
class GgufMetadata {
 public:
  void add_u8(std::string_view key, uint8_t v) { add_fixed(key, GgufType::U8, v); }
  void add_i8(std::string_view key, int8_t v) { add_fixed(key, GgufType::I8, static_cast<uint8_t>(v)); }
  void add_u16(std::string_view key, uint16_t v) { add_fixed(key, GgufType::U16, v); }
  void add_i16(std::string_view key, int16_t v) { add_fixed(key, GgufType::I16, static_cast<uint16_t>(v)); }
  void add_u32(std::string_view key, uint32_t v) { add_fixed(key, GgufType::U32, v); }
  void add_i32(std::string_view key, int32_t v) { add_fixed(key, GgufType::I32, static_cast<uint32_t>(v)); }
  void add_f32(std::string_view key, float v);
  void add_bool(std::string_view key, bool v) { add_fixed(key, GgufType::Bool, v ? 1 : 0); }
  void add_u64(std::string_view key, uint64_t v) { add_fixed(key, GgufType::U64, v); }
  void add_i64(std::string_view key, int64_t v) { add_fixed(key, GgufType::I64, static_cast<uint64_t>(v)); }
  void add_f64(std::string_view key, double v);
  void add_string(std::string_view key, std::string_view v);
  // An array of fixed-size elements given as packed little-endian bytes (count = bytes / size).
  void add_array(std::string_view key, GgufType element_type, std::span<const uint8_t> packed);
  void add_i32_array(std::string_view key, std::span<const int32_t> values);
  void add_string_array(std::string_view key, const std::vector<std::string>& values);
  // Copies a value read from another file (used when rewriting GGUF metadata).
  void add_value(std::string_view key, const GgufValue& value);

  uint64_t count() const { return count_; }
  const std::vector<uint8_t>& bytes() const { return bytes_; }
  bool contains(std::string_view key) const;

 private:
  void add_key(std::string_view key, GgufType type);
  void add_fixed(std::string_view key, GgufType type, uint64_t bits);
  void put_string(std::string_view s);
  void put_le(uint64_t v, unsigned bytes);

  std::vector<uint8_t> bytes_;
  std::vector<std::string> keys_;
  uint64_t count_ = 0;
};

struct GgufTensorEntry {
  std::string name;            // < 64 bytes
  uint32_t ggml_type = 0;
  std::vector<uint64_t> ne;    // ne[0] innermost
  TensorSourcePtr data;        // exactly the tensor's byte size (from ne and the type)
};

// Bytes of the entry's data; throws std::invalid_argument for an unknown type, bad ne[0] or overflow.
uint64_t gguf_tensor_bytes(const GgufTensorEntry& entry);

// Writes one GGUF file through AtomicFileWriter; throws std::invalid_argument for bad entries
// (name too long or repeated, unknown type, more than 4 dims, data of another size) before
// anything is written.
void write_gguf(const std::filesystem::path& path, const GgufMetadata& metadata,
                const std::vector<GgufTensorEntry>& tensors, uint32_t alignment = 32,
                const PipelineOptions& stream = {});

// "<stem>-00001-of-00003.gguf" for path "<dir>/<stem>.gguf", shard 0 of 3.
std::filesystem::path gguf_split_path(const std::filesystem::path& path, uint32_t index, uint32_t count);

// Splits the tensors into shards of at most max_shard_bytes of tensor data (a larger tensor gets a
// shard of its own; 0 = no limit) and writes them. One shard: `path` itself, no split keys. Several:
// shard 0 holds all metadata, every shard the split.* keys. Returns the file names written.
std::vector<std::string> write_gguf_split(const std::filesystem::path& path, const GgufMetadata& metadata,
                                          const std::vector<GgufTensorEntry>& tensors, uint64_t max_shard_bytes,
                                          uint32_t alignment = 32, const PipelineOptions& stream = {});

}  // namespace gptoss

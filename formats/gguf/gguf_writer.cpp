#include "formats/gguf/gguf_writer.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <memory>
#include <set>
#include <stdexcept>

#include "formats/core/atomic_file.h"
#include "formats/core/checked_math.h"
#include "formats/gguf/gguf_file.h"

namespace gptoss {

void GgufMetadata::put_le(uint64_t v, unsigned n) {
  for (unsigned i = 0; i < n; ++i) bytes_.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

void GgufMetadata::put_string(std::string_view s) {
  put_le(s.size(), 8);
  bytes_.insert(bytes_.end(), s.begin(), s.end());
}

bool GgufMetadata::contains(std::string_view key) const {
  return std::find(keys_.begin(), keys_.end(), key) != keys_.end();
}

void GgufMetadata::add_key(std::string_view key, GgufType type) {
  if (key.empty()) throw std::invalid_argument("GGUF metadata key must not be empty");
  if (contains(key)) throw std::invalid_argument("GGUF metadata key " + std::string(key) + " added twice");
  keys_.emplace_back(key);
  put_string(key);
  put_le(static_cast<uint32_t>(type), 4);
  ++count_;
}

void GgufMetadata::add_fixed(std::string_view key, GgufType type, uint64_t bits) {
  add_key(key, type);
  put_le(bits, gguf_fixed_size(type));
}

void GgufMetadata::add_f32(std::string_view key, float v) { add_fixed(key, GgufType::F32, std::bit_cast<uint32_t>(v)); }
void GgufMetadata::add_f64(std::string_view key, double v) { add_fixed(key, GgufType::F64, std::bit_cast<uint64_t>(v)); }

void GgufMetadata::add_string(std::string_view key, std::string_view v) {
  add_key(key, GgufType::String);
  put_string(v);
}

void GgufMetadata::add_array(std::string_view key, GgufType element_type, std::span<const uint8_t> packed) {
  const uint32_t size = gguf_fixed_size(element_type);
  if (size == 0 || packed.size() % size != 0)
    throw std::invalid_argument("GGUF array " + std::string(key) + ": elements must be fixed-size and whole");
  add_key(key, GgufType::Array);
  put_le(static_cast<uint32_t>(element_type), 4);
  put_le(packed.size() / size, 8);
  bytes_.insert(bytes_.end(), packed.begin(), packed.end());
}

void GgufMetadata::add_i32_array(std::string_view key, std::span<const int32_t> values) {
  add_key(key, GgufType::Array);
  put_le(static_cast<uint32_t>(GgufType::I32), 4);
  put_le(values.size(), 8);
  for (int32_t v : values) put_le(static_cast<uint32_t>(v), 4);
}

void GgufMetadata::add_string_array(std::string_view key, const std::vector<std::string>& values) {
  add_key(key, GgufType::Array);
  put_le(static_cast<uint32_t>(GgufType::String), 4);
  put_le(values.size(), 8);
  for (const auto& v : values) put_string(v);
}

void GgufMetadata::add_value(std::string_view key, const GgufValue& value) {
  if (value.type == GgufType::String) return add_string(key, value.string);
  if (value.type != GgufType::Array) return add_fixed(key, value.type, value.bits);
  if (value.element_type != GgufType::String) return add_array(key, value.element_type, value.raw);
  add_key(key, GgufType::Array);
  put_le(static_cast<uint32_t>(GgufType::String), 4);
  put_le(value.strings.size(), 8);
  for (const auto& s : value.strings) put_string(s);
}

uint64_t gguf_tensor_bytes(const GgufTensorEntry& e) {
  const auto dtype = dtype_from_ggml_type(e.ggml_type);
  if (!dtype) throw std::invalid_argument(e.name + ": unknown ggml type " + std::to_string(e.ggml_type));
  const DTypeInfo& type = dtype_info(*dtype);
  if (e.ne.empty() || e.ne.size() > kGgufMaxDims) throw std::invalid_argument(e.name + ": GGUF tensors have 1 to 4 dims");
  if (e.ne[0] % type.block_elements != 0)
    throw std::invalid_argument(e.name + ": ne[0] is not a multiple of the " + std::string(type.name) + " block size");
  const auto elements = checked_product(e.ne);
  const auto bytes = elements ? checked_mul(*elements / type.block_elements, type.block_bytes) : std::nullopt;
  if (!bytes) throw std::invalid_argument(e.name + ": tensor size overflows");
  return *bytes;
}

namespace {
void put_le(std::vector<uint8_t>& out, uint64_t v, unsigned n) {
  for (unsigned i = 0; i < n; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
}  // namespace

namespace {
// Writes the whole file into its temp file and finishes it (fsync'd, not yet renamed): the caller
// commits it alone or together with the other files of a split set.
std::unique_ptr<AtomicFileWriter> write_gguf_unpublished(const std::filesystem::path& path, const GgufMetadata& metadata,
                                                         const std::vector<GgufTensorEntry>& tensors, uint32_t alignment,
                                                         OrderedChunkPipeline& data) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    throw std::invalid_argument("GGUF alignment must be a power of two");
  // Everything before the data is known up front: build the tensor infos with their offsets.
  std::vector<uint8_t> infos;
  std::vector<uint64_t> sizes;
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    if (t.name.empty() || t.name.size() > kGgufMaxNameBytes)
      throw std::invalid_argument("GGUF tensor name \"" + t.name + "\" must be 1 to 63 bytes");
    if (!names.insert(t.name).second) throw std::invalid_argument("GGUF tensor " + t.name + " added twice");
    const uint64_t size = gguf_tensor_bytes(t);
    sizes.push_back(size);
    put_le(infos, t.name.size(), 8);
    infos.insert(infos.end(), t.name.begin(), t.name.end());
    put_le(infos, t.ne.size(), 4);
    for (uint64_t d : t.ne) put_le(infos, d, 8);
    put_le(infos, t.ggml_type, 4);
    put_le(infos, offset, 8);
    offset = align_up(offset + size, alignment);
  }

  auto writer = std::make_unique<AtomicFileWriter>(path);
  AtomicFileWriter& out = *writer;
  out.write_u32(kGgufMagic);
  out.write_u32(3);
  out.write_u64(tensors.size());
  out.write_u64(metadata.count());
  out.write(metadata.bytes());
  out.write(infos);
  out.pad_to(alignment);
  const uint64_t data_start = out.position();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const uint64_t before = out.position();
    if (before - data_start != align_up(before - data_start, alignment))
      throw std::logic_error("GGUF writer lost alignment before " + tensors[i].name);
    data.write_next(out);
    if (out.position() - before != sizes[i])
      throw std::logic_error("GGUF tensor " + tensors[i].name + " wrote " + std::to_string(out.position() - before) +
                             " bytes, its infos say " + std::to_string(sizes[i]));
    out.pad_to(alignment);
  }
  out.finish();
  return writer;
}

// The tensors' data in file order, for one pipeline over every file of a set; checked first, so a
// wrong size is an error before anything is produced or written.
std::vector<PipelineItem> pipeline_items(const std::vector<GgufTensorEntry>& tensors) {
  std::vector<PipelineItem> items;
  for (const auto& t : tensors) {
    const uint64_t size = gguf_tensor_bytes(t);
    if (!t.data || t.data->size() != size)
      throw std::invalid_argument("GGUF tensor " + t.name + " has " + std::to_string(t.data ? t.data->size() : 0) +
                                  " bytes of data, its type and shape need " + std::to_string(size));
    items.push_back({t.name, t.data});
  }
  return items;
}
}  // namespace

void write_gguf(const std::filesystem::path& path, const GgufMetadata& metadata,
                const std::vector<GgufTensorEntry>& tensors, uint32_t alignment, const PipelineOptions& stream) {
  OrderedChunkPipeline data(pipeline_items(tensors), stream);
  write_gguf_unpublished(path, metadata, tensors, alignment, data)->commit();
}

std::filesystem::path gguf_split_path(const std::filesystem::path& path, uint32_t index, uint32_t count) {
  char suffix[40];
  std::snprintf(suffix, sizeof suffix, "-%05u-of-%05u.gguf", index + 1, count);
  return path.parent_path() / (path.stem().string() + suffix);
}

std::vector<std::string> write_gguf_split(const std::filesystem::path& path, const GgufMetadata& metadata,
                                          const std::vector<GgufTensorEntry>& tensors, uint64_t max_shard_bytes,
                                          uint32_t alignment, const PipelineOptions& stream) {
  std::vector<std::vector<GgufTensorEntry>> shards(1);
  uint64_t current = 0;
  for (const auto& t : tensors) {
    const uint64_t size = align_up(gguf_tensor_bytes(t), alignment);
    if (max_shard_bytes != 0 && !shards.back().empty() && current + size > max_shard_bytes) {
      shards.emplace_back();
      current = 0;
    }
    shards.back().push_back(t);
    current += size;
  }
  if (shards.size() == 1) {
    write_gguf(path, metadata, tensors, alignment, stream);
    return {path.filename().string()};
  }
  if (shards.size() > 65535) throw std::invalid_argument("GGUF split sets hold at most 65535 files");
  if (tensors.size() > static_cast<uint64_t>(INT32_MAX)) throw std::invalid_argument("too many tensors for split.tensors.count");
  const auto count = static_cast<uint32_t>(shards.size());
  // Every file is written before any is renamed into place: an interruption leaves the previous
  // set (or nothing), never a mix of old and new files.
  std::vector<std::string> names;
  std::vector<std::unique_ptr<AtomicFileWriter>> finished;
  OrderedChunkPipeline data(pipeline_items(tensors), stream);  // the shards hold the tensors in order
  for (uint32_t i = 0; i < count; ++i) {
    GgufMetadata shard_metadata = i == 0 ? metadata : GgufMetadata();
    shard_metadata.add_u16("split.no", static_cast<uint16_t>(i));
    shard_metadata.add_u16("split.count", static_cast<uint16_t>(count));
    shard_metadata.add_i32("split.tensors.count", static_cast<int32_t>(tensors.size()));
    const auto shard_path = gguf_split_path(path, i, count);
    finished.push_back(write_gguf_unpublished(shard_path, shard_metadata, shards[i], alignment, data));
    names.push_back(shard_path.filename().string());
  }
  commit_together(finished);
  return names;
}

}  // namespace gptoss

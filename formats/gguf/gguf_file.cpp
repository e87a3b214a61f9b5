#include "formats/gguf/gguf_file.h"

#include <limits>

#include "formats/core/checked_math.h"
#include "formats/core/error.h"

namespace gptoss {
namespace {
constexpr uint64_t kMaxInt64 = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
// The smallest possible records, used to bound counts by the bytes that remain before anything
// is allocated: a KV is a key length (8) + a 1-byte key + type (4) + a 1-byte value; a tensor
// info is a name length (8) + a 1-byte name + n_dims (4) + one dim (8) + type (4) + offset (8).
constexpr uint64_t kMinKvBytes = 14;
constexpr uint64_t kMinTensorInfoBytes = gguf_tensor_info_bytes(1, 1);
static_assert(kMinTensorInfoBytes == 33);

std::string_view read_string(ByteReader& r, const std::string& field) {
  const uint64_t at = r.position();
  const uint64_t length = r.u64(field + " length");
  if (length > kGgufMaxStringBytes)
    r.fail_at(at, field + " length", "string of " + std::to_string(length) + " bytes exceeds the 2^30-byte limit");
  if (length > r.remaining())
    r.fail_at(at, field + " length",
              "string of " + std::to_string(length) + " bytes runs past the end of the file (" +
                  std::to_string(r.remaining()) + " bytes remain)");
  return r.string_view(length, field);
}

GgufType read_type(ByteReader& r, const std::string& field) {
  const uint64_t at = r.position();
  const uint32_t raw = r.u32(field);
  if (raw >= kGgufTypeCount) r.fail_at(at, field, "unknown value type " + std::to_string(raw));
  return static_cast<GgufType>(raw);
}

GgufValue read_value(ByteReader& r, GgufType type, const std::string& field) {
  GgufValue v;
  v.type = type;
  if (type == GgufType::String) {
    v.string = read_string(r, field);
    return v;
  }
  if (type != GgufType::Array) {
    const auto bytes = r.bytes(gguf_fixed_size(type), field);
    for (size_t i = 0; i < bytes.size(); ++i) v.bits |= static_cast<uint64_t>(bytes[i]) << (8 * i);
    return v;
  }
  const uint64_t type_at = r.position();
  v.element_type = read_type(r, field + " element type");
  if (v.element_type == GgufType::Array) r.fail_at(type_at, field + " element type", "nested arrays are not supported");
  const uint64_t count_at = r.position();
  v.count = r.u64(field + " count");
  if (v.count > kGgufMaxArrayCount)
    r.fail_at(count_at, field + " count", "array of " + std::to_string(v.count) + " elements exceeds the 2^30 limit");
  const uint64_t min_element = v.element_type == GgufType::String ? 8 : gguf_fixed_size(v.element_type);
  if (v.count * min_element > r.remaining())  // no overflow: count <= 2^30, element <= 8
    r.fail_at(count_at, field + " count",
              "array of " + std::to_string(v.count) + " " + std::string(gguf_type_name(v.element_type)) +
                  " elements cannot fit in the " + std::to_string(r.remaining()) + " bytes that remain");
  if (v.element_type == GgufType::String) {
    v.strings.reserve(static_cast<size_t>(v.count));
    for (uint64_t i = 0; i < v.count; ++i) v.strings.push_back(read_string(r, field + "[" + std::to_string(i) + "]"));
  } else {
    v.raw = r.bytes(v.count * min_element, field);
  }
  return v;
}
}  // namespace

uint64_t GgufTensorInfo::elements() const {
  uint64_t n = 1;
  for (uint64_t d : ne) n *= d;  // checked against overflow when the file was parsed
  return n;
}

GgufFile GgufFile::open(const std::filesystem::path& path) { return parse(MappedFile::open(path)); }

GgufFile GgufFile::parse(std::shared_ptr<const MappedFile> file) {
  GgufFile g;
  g.file_ = std::move(file);
  ByteReader r(g.file_->bytes(), g.file_->path());

  if (r.u32("magic") != kGgufMagic) r.fail_at(0, "magic", "not a GGUF file (the first 4 bytes are not \"GGUF\")");
  g.version_ = r.u32("version");
  if (g.version_ != 0 && (g.version_ & 0xFFFF) == 0)
    r.fail_at(4, "version", "version " + std::to_string(g.version_) + " looks byte-swapped: big-endian GGUF is not supported");
  if (g.version_ != 2 && g.version_ != 3)
    r.fail_at(4, "version", "unsupported GGUF version " + std::to_string(g.version_) + " (2 and 3 are supported)");
  const uint64_t tensor_count = r.u64("tensor_count");
  const uint64_t kv_count = r.u64("kv_count");
  if (tensor_count > r.remaining() / kMinTensorInfoBytes)
    r.fail_at(8, "tensor_count",
              std::to_string(tensor_count) + " tensors cannot fit in the " + std::to_string(r.remaining()) +
                  " bytes after the header");
  if (kv_count > r.remaining() / kMinKvBytes)
    r.fail_at(16, "kv_count",
              std::to_string(kv_count) + " key-value pairs cannot fit in the " + std::to_string(r.remaining()) +
                  " bytes after the header");

  g.kvs_.reserve(static_cast<size_t>(kv_count));
  for (uint64_t i = 0; i < kv_count; ++i) {
    const uint64_t at = r.position();
    const std::string field = "kv[" + std::to_string(i) + "]";
    GgufKv kv;
    kv.offset = r.file_offset();
    kv.key = std::string(read_string(r, field + ".key"));
    if (kv.key.empty()) r.fail_at(at, field + ".key", "empty key");
    if (g.kv_index_.count(kv.key)) r.fail_at(at, kv.key, "duplicate key");
    const GgufType type = read_type(r, kv.key + " type");
    kv.value = read_value(r, type, kv.key);
    g.kv_index_.emplace(kv.key, g.kvs_.size());
    g.kvs_.push_back(std::move(kv));
  }

  if (const GgufKv* a = g.find("general.alignment")) {
    if (a->value.type != GgufType::U32)
      r.fail_at(a->offset, "general.alignment",
                "must be UINT32, found " + std::string(gguf_type_name(a->value.type)));
    const uint64_t value = a->value.bits;
    if (value == 0 || (value & (value - 1)) != 0)
      r.fail_at(a->offset, "general.alignment", std::to_string(value) + " is not a power of two");
    g.alignment_ = static_cast<uint32_t>(value);
  }

  g.tensors_.reserve(static_cast<size_t>(tensor_count));
  for (uint64_t i = 0; i < tensor_count; ++i) {
    GgufTensorInfo t;
    const std::string field = "tensor[" + std::to_string(i) + "]";
    t.info_offset = r.file_offset();
    const uint64_t name_at = r.position();
    t.name = std::string(read_string(r, field + ".name"));
    if (t.name.empty()) r.fail_at(name_at, field + ".name", "empty tensor name");
    if (t.name.size() > kGgufMaxNameBytes)
      r.fail_at(name_at, t.name, "tensor name of " + std::to_string(t.name.size()) + " bytes is longer than ggml's 63");
    if (g.tensor_index_.count(t.name)) r.fail_at(name_at, t.name, "duplicate tensor name");
    const uint64_t dims_at = r.position();
    const uint32_t n_dims = r.u32(t.name + " n_dims");
    if (n_dims == 0 || n_dims > kGgufMaxDims)
      r.fail_at(dims_at, t.name + " n_dims", std::to_string(n_dims) + " dimensions (1 to 4 are allowed)");
    uint64_t elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t ne_at = r.position();
      const uint64_t ne = r.u64(t.name + " ne[" + std::to_string(d) + "]");
      if (ne > kMaxInt64) r.fail_at(ne_at, t.name + " ne[" + std::to_string(d) + "]", "dimension is negative as int64");
      const auto product = checked_mul(elements, ne);
      if (!product || *product > kMaxInt64)
        r.fail_at(ne_at, t.name + " ne[" + std::to_string(d) + "]", "element count overflows int64");
      elements = *product;
      t.ne.push_back(ne);
    }
    const uint64_t type_at = r.position();
    t.ggml_type = r.u32(t.name + " type");
    const auto dtype = dtype_from_ggml_type(t.ggml_type);
    if (!dtype) r.fail_at(type_at, t.name + " type", "unknown ggml type " + std::to_string(t.ggml_type));
    t.dtype = *dtype;
    const DTypeInfo& type = dtype_info(t.dtype);
    if (t.ne[0] % type.block_elements != 0)
      r.fail_at(dims_at + 4, t.name + " ne[0]",  // ne[0] follows the 4-byte n_dims
                "row width ne[0] = " + std::to_string(t.ne[0]) + " is not a multiple of the " + std::string(type.name) +
                    " block size " + std::to_string(type.block_elements));
    const auto size = checked_mul(elements / type.block_elements, type.block_bytes);
    if (!size) r.fail_at(dims_at, t.name + " ne", "byte size overflows");
    t.size = *size;
    t.offset = r.u64(t.name + " offset");
    g.tensor_index_.emplace(t.name, g.tensors_.size());
    g.tensors_.push_back(std::move(t));
  }

  const auto data_offset = checked_align_up(r.file_offset(), g.alignment_);
  if (!data_offset) r.fail("data section", "data offset overflows");
  g.data_offset_ = *data_offset;
  uint64_t expected = 0;
  for (const auto& t : g.tensors_) {
    const uint64_t offset_field = t.offset_field();
    if (t.offset % g.alignment_ != 0)
      throw_format_error(g.path(), t.name + " offset", offset_field,
                         "offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                             std::to_string(g.alignment_));
    if (t.offset != expected)
      throw_format_error(g.path(), t.name + " offset", offset_field,
                         "tensor has offset " + std::to_string(t.offset) + ", expected " + std::to_string(expected) +
                             " (tensor data must be in info order, tightly packed)");
    const auto start = checked_add(g.data_offset_, t.offset);
    const auto end = start ? checked_add(*start, t.size) : std::nullopt;
    if (!end || *end > g.file_->size())
      throw_format_error(g.path(), t.name + " data", start.value_or(g.data_offset_),
                         std::to_string(t.size) + " bytes of tensor data run past the end of the file (" +
                             std::to_string(g.file_->size()) + " bytes): truncated file");
    const auto next = checked_align_up(t.offset + t.size, g.alignment_);
    if (!next) throw_format_error(g.path(), t.name + " data", offset_field, "offset overflows");
    expected = *next;
  }
  return g;
}

const GgufKv* GgufFile::find(std::string_view key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kvs_[it->second];
}

void GgufFile::fail(std::string_view field, std::optional<uint64_t> offset, const std::string& message) const {
  throw_format_error(path(), std::string(field), offset, message);
}

const GgufValue* GgufFile::optional(std::string_view key, GgufType type) const {
  const GgufKv* kv = find(key);
  if (!kv) return nullptr;
  if (kv->value.type != type)
    fail(key, kv->offset,
         "key has type " + std::string(gguf_type_name(kv->value.type)) + ", expected " + std::string(gguf_type_name(type)));
  return &kv->value;
}

const GgufValue& GgufFile::require(std::string_view key, GgufType type) const {
  const GgufValue* v = optional(key, type);
  if (!v) fail(key, std::nullopt, "required key is missing");
  return *v;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

std::span<const uint8_t> GgufFile::data(const GgufTensorInfo& t) const {
  return file_->slice(data_offset_ + t.offset, t.size, t.name);
}

std::vector<StoredTensorRange> GgufFile::stored_tensors() const {
  std::vector<StoredTensorRange> out;
  for (const auto& t : tensors_) out.push_back({t.name, data_offset_ + t.offset, t.size});
  return out;
}

}  // namespace gptoss

#include "formats/safetensors/safetensors_writer.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "formats/core/atomic_file.h"
#include "formats/core/checked_math.h"
#include "formats/safetensors/safetensors_file.h"

namespace gptoss {
namespace {
// The official writer's dtype order (ascending alignment); it sorts descending. A dtype
// safetensors does not have ranks last; the header check refuses it.
int writer_rank(DType t) {
  static const DType order[] = {DType::BOOL, DType::F4, DType::F6_E2M3, DType::F6_E3M2, DType::U8, DType::I8,
                                DType::F8_E5M2, DType::F8_E4M3, DType::E8M0, DType::F8_E4M3FNUZ,
                                DType::F8_E5M2FNUZ, DType::I16, DType::U16, DType::F16, DType::BF16, DType::I32,
                                DType::U32, DType::F32, DType::C64, DType::F64, DType::I64, DType::U64};
  for (size_t i = 0; i < std::size(order); ++i)
    if (order[i] == t) return static_cast<int>(i);
  return -1;
}

// The header entries of one file: the entries in this order from offset 0 as the reader will see
// them, checked by the reader's own rules (check_safetensors_header) before anything is produced
// or written. A tensor without a name is refused too: the reader (like the official one) accepts
// it, but nothing can address it.
std::vector<SafetensorsTensor> checked_tensors(const std::filesystem::path& path,
                                               const std::vector<const SafetensorsEntry*>& ordered,
                                               const std::map<std::string, std::string>& metadata) {
  std::vector<SafetensorsTensor> tensors;
  tensors.reserve(ordered.size());
  uint64_t offset = 0;
  for (const auto* e : ordered) {
    if (e->name.empty()) throw std::invalid_argument(path.string() + ": a tensor has an empty name");
    // A shape without a byte size counts as empty here; the rules below name it.
    const auto numel = checked_product(e->shape);
    const uint64_t size = (numel ? dtype_byte_size(e->dtype, *numel) : std::nullopt).value_or(0);
    const auto end = checked_add(offset, size);
    if (!end) throw std::invalid_argument(path.string() + ": tensor \"" + e->name + "\": data past 2^64 bytes");
    tensors.push_back({e->name, e->dtype, e->shape, offset, *end});
    offset = *end;
  }
  if (const auto broken = check_safetensors_header(tensors, metadata, offset))
    throw std::invalid_argument(path.string() + ": " + broken->field + ": " + broken->message +
                                " (the header would break a rule of the format)");
  return tensors;
}

// The header text of one file, from exactly the checked entries, padded with spaces to a multiple of 8.
std::string checked_header(const std::filesystem::path& path, const std::vector<const SafetensorsEntry*>& ordered,
                           const std::map<std::string, std::string>& metadata) {
  std::string header = safetensors_header_json(checked_tensors(path, ordered, metadata), metadata);
  header.append((8 - header.size() % 8) % 8, ' ');
  if (header.size() > SafetensorsFile::kMaxHeaderSize)
    throw std::invalid_argument(path.string() + ": header would exceed the 100000000-byte limit");
  return header;
}
}  // namespace

uint64_t safetensors_entry_bytes(const SafetensorsEntry& e) {
  auto n = checked_product(e.shape);
  auto bytes = n ? dtype_byte_size(e.dtype, *n) : std::nullopt;
  if (!bytes) throw std::invalid_argument("tensor " + e.name + ": shape does not give a whole number of bytes");
  return *bytes;
}

std::vector<const SafetensorsEntry*> safetensors_canonical_order(const std::vector<SafetensorsEntry>& entries) {
  std::vector<const SafetensorsEntry*> out;
  for (const auto& e : entries) out.push_back(&e);
  std::sort(out.begin(), out.end(), [](const SafetensorsEntry* a, const SafetensorsEntry* b) {
    int ra = writer_rank(a->dtype), rb = writer_rank(b->dtype);
    return ra != rb ? ra > rb : a->name < b->name;
  });
  return out;
}

std::string safetensors_header_json(const std::vector<SafetensorsTensor>& tensors,
                                    const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) meta[k] = v;
    header["__metadata__"] = meta;
  }
  for (const auto& t : tensors) {
    nlohmann::ordered_json entry = nlohmann::ordered_json::object();
    entry["dtype"] = std::string(dtype_info(t.dtype).safetensors_name);
    entry["shape"] = t.shape;
    entry["data_offsets"] = {t.begin, t.end};
    header[t.name] = entry;
  }
  return header.dump();
}

namespace {
// The entries' data in file order (checked first: a wrong size is an error before anything is
// produced or written), for one pipeline over every shard.
std::vector<PipelineItem> pipeline_items(const std::vector<const SafetensorsEntry*>& ordered) {
  std::vector<PipelineItem> items;
  for (const auto* e : ordered) {
    const uint64_t size = safetensors_entry_bytes(*e);
    if (!e->data || e->data->size() != size)
      throw std::invalid_argument("tensor " + e->name + " has " + std::to_string(e->data ? e->data->size() : 0) +
                                  " bytes of data, its dtype and shape need " + std::to_string(size));
    items.push_back({e->name, e->data});
  }
  return items;
}

// One file of entries in canonical order under its checked header; their data are the pipeline's next items.
void write_safetensors_file(const std::filesystem::path& path, const std::string& header,
                            const std::vector<const SafetensorsEntry*>& ordered, OrderedChunkPipeline& data) {
  AtomicFileWriter out(path);
  out.write_u64(header.size());
  out.write(header.data(), header.size());
  for (const auto* e : ordered) {
    const uint64_t start = out.position();
    data.write_next(out);
    if (out.position() - start != safetensors_entry_bytes(*e))
      throw std::logic_error("tensor " + e->name + ": wrote " + std::to_string(out.position() - start) +
                             " bytes, expected " + std::to_string(safetensors_entry_bytes(*e)));
  }
  out.commit();
}
}  // namespace

void write_safetensors(const std::filesystem::path& path, const std::vector<SafetensorsEntry>& entries,
                       const std::map<std::string, std::string>& metadata, const PipelineOptions& stream) {
  const auto ordered = safetensors_canonical_order(entries);
  const std::string header = checked_header(path, ordered, metadata);
  OrderedChunkPipeline data(pipeline_items(ordered), stream);
  write_safetensors_file(path, header, ordered, data);
}

std::vector<std::string> write_sharded_safetensors(const std::filesystem::path& dir,
                                                   const std::vector<SafetensorsEntry>& entries,
                                                   uint64_t max_shard_bytes,
                                                   const std::map<std::string, std::string>& metadata,
                                                   const std::function<void(const std::string&)>& on_file,
                                                   const PipelineOptions& stream) {
  std::filesystem::create_directories(dir);
  // Greedy fill in the canonical order, so shards are contiguous runs of the single-file order.
  auto ordered = safetensors_canonical_order(entries);
  checked_tensors(dir, ordered, metadata);  // the whole set first: each name once, every size known
  std::vector<std::vector<const SafetensorsEntry*>> shards(1);
  uint64_t current = 0, total = 0;
  for (const auto* e : ordered) {
    uint64_t size = safetensors_entry_bytes(*e);
    if (!shards.back().empty() && max_shard_bytes > 0 && current + size > max_shard_bytes) {
      shards.emplace_back();
      current = 0;
    }
    shards.back().push_back(e);
    current += size;
    total += size;
  }
  // Every shard's name and header before anything is written.
  std::vector<std::string> names, headers;
  for (size_t i = 0; i < shards.size(); ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
    names.emplace_back(shards.size() == 1 ? "model.safetensors" : name);
    headers.push_back(checked_header(dir / names.back(), shards[i], metadata));
  }
  OrderedChunkPipeline data(pipeline_items(ordered), stream);  // the shards hold the entries in order
  std::map<std::string, std::string> sorted_map;
  for (size_t i = 0; i < shards.size(); ++i) {
    if (on_file) on_file(names[i]);
    write_safetensors_file(dir / names[i], headers[i], shards[i], data);
    for (const auto* e : shards[i]) sorted_map[e->name] = names[i];
  }
  if (shards.size() == 1) return names;  // one file: model.safetensors, no index
  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  for (const auto& [k, v] : sorted_map) weight_map[k] = v;
  nlohmann::ordered_json index;
  index["metadata"] = {{"total_size", total}};
  index["weight_map"] = weight_map;
  std::string text = index.dump(2) + "\n";
  AtomicFileWriter out(dir / "model.safetensors.index.json");
  out.write(text.data(), text.size());
  out.commit();
  return names;
}

}  // namespace gptoss

#pragma once
// Writes safetensors files in the canonical form of the official writer: tensors sorted by
// dtype (descending alignment) then name, compact JSON with __metadata__ first, header padded
// with spaces to a multiple of 8. Tensor bytes are streamed from TensorSources through the ordered
// chunk pipeline (chunk_pipeline.h: produced on every core, written in order), so a file of any
// size is written with bounded memory. Sharding writes model-0000i-of-0000N.safetensors plus
// model.safetensors.index.json.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "formats/core/chunk_pipeline.h"
#include "formats/core/dtype.h"
#include "formats/core/tensor_source.h"
#include "formats/safetensors/safetensors_file.h"

namespace gptoss {

struct SafetensorsEntry {
  std::string name;
  DType dtype;
  std::vector<uint64_t> shape;
  TensorSourcePtr data;  // exactly the tensor's byte size
};

// Bytes of the entry's data (dtype x shape); throws std::invalid_argument when not representable.
uint64_t safetensors_entry_bytes(const SafetensorsEntry& entry);

// The canonical tensor order for a set of entries, and the header JSON (unpadded) of entries with
// their offsets, in that order. write_safetensors checks every header it writes with the
// reader's rules (check_safetensors_header) before anything is written: std::invalid_argument
// naming the file, the field and the rule.
std::vector<const SafetensorsEntry*> safetensors_canonical_order(const std::vector<SafetensorsEntry>& entries);
std::string safetensors_header_json(const std::vector<SafetensorsTensor>& tensors,
                                    const std::map<std::string, std::string>& metadata);

// Throws std::invalid_argument (before writing anything) for a header the reader would reject
// and for entries whose data has another size.
void write_safetensors(const std::filesystem::path& path, const std::vector<SafetensorsEntry>& entries,
                       const std::map<std::string, std::string>& metadata = {{"format", "pt"}},
                       const PipelineOptions& stream = {});

// Splits entries into shards of at most max_shard_bytes of data each (a larger single tensor gets
// a shard of its own), writes them into `dir` and returns the file names. With one shard the
// file is model.safetensors and no index is written.
std::vector<std::string> write_sharded_safetensors(const std::filesystem::path& dir,
                                                   const std::vector<SafetensorsEntry>& entries,
                                                   uint64_t max_shard_bytes,
                                                   const std::map<std::string, std::string>& metadata = {{"format", "pt"}},
                                                   const std::function<void(const std::string&)>& on_file = {},
                                                   const PipelineOptions& stream = {});

}  // namespace gptoss

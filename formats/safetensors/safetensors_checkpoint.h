#pragma once
// A checkpoint made of safetensors files: a sharded folder (model.safetensors.index.json with a
// weight_map, resolved by the map and never by name patterns), a folder with one or several
// *.safetensors and no index (OpenAI's original/ layout), or a single file.
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/safetensors/safetensors_file.h"

namespace gptoss {

// Where a checkpoint's tensors are stored, by the one rule its reader follows: a file is itself;
// a folder with model.safetensors.index.json holds the shards its weight_map names (and no
// other); a folder without one, every *.safetensors in it. Shards are not opened here.
struct CheckpointShards {
  std::filesystem::path root;                     // the folder (a file's parent)
  std::optional<std::filesystem::path> index;     // model.safetensors.index.json, when the folder has one
  std::map<std::string, std::string> weight_map;  // from the index: tensor name -> shard file name
  nlohmann::json index_total_size;                // the index's metadata.total_size as stored; null when absent
  std::vector<std::filesystem::path> files;       // sorted by name
};
// Throws FormatError for a bad index or a folder with neither index nor *.safetensors.
CheckpointShards find_checkpoint_shards(const std::filesystem::path& path);

struct CheckpointTensorRef {
  const SafetensorsFile* file;
  const SafetensorsTensor* tensor;
};

class SafetensorsCheckpoint {
 public:
  static SafetensorsCheckpoint open(const std::filesystem::path& path);

  const std::filesystem::path& root() const { return root_; }
  const std::vector<std::unique_ptr<SafetensorsFile>>& files() const { return files_; }
  bool has_index() const { return shards_.index.has_value(); }
  const CheckpointShards& shards() const { return shards_; }  // the index as read, and the shard paths
  // Tensor names in a stable order (file order, then data order).
  const std::vector<std::string>& names() const { return names_; }
  const CheckpointTensorRef* find(std::string_view name) const;
  const CheckpointTensorRef& get(std::string_view name) const;  // throws FormatError when absent

 private:
  std::filesystem::path root_;
  CheckpointShards shards_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::vector<std::string> names_;
  std::map<std::string, CheckpointTensorRef, std::less<>> tensors_;
};

}  // namespace gptoss

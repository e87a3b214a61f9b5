#pragma once
// A checkpoint made of safetensors files: a sharded folder (model.safetensors.index.json with a
// weight_map, resolved by the map and never by name patterns), a folder with one or several
// *.safetensors and no index (OpenAI's original/ layout), or a single file.
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "formats/safetensors/safetensors_file.h"

namespace gptoss {

struct CheckpointTensorRef {
  const SafetensorsFile* file;
  const SafetensorsTensor* tensor;
};

class SafetensorsCheckpoint {
 public:
  static SafetensorsCheckpoint open(const std::filesystem::path& path);

  const std::filesystem::path& root() const { return root_; }
  const std::vector<std::unique_ptr<SafetensorsFile>>& files() const { return files_; }
  bool has_index() const { return has_index_; }
  // Tensor names in a stable order (file order, then data order).
  const std::vector<std::string>& names() const { return names_; }
  const CheckpointTensorRef* find(std::string_view name) const;
  const CheckpointTensorRef& get(std::string_view name) const;  // throws FormatError when absent

 private:
  std::filesystem::path root_;
  bool has_index_ = false;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::vector<std::string> names_;
  std::map<std::string, CheckpointTensorRef, std::less<>> tensors_;
};

}  // namespace gptoss

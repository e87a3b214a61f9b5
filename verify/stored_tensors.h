#pragma once
// The files a model consists of and the tensors as each file stores them (name and byte range),
// per container format. Used for per-tensor checksums and manifests.
#include <filesystem>
#include <string>
#include <vector>

namespace gptoss {

struct StoredTensorRange {
  std::string name;
  uint64_t offset;  // absolute in the file
  uint64_t size;
};

// All files of a model: the shards of a safetensors checkpoint (and its index/config JSON), a
// GGUF and its split siblings, or a model.bin.
std::vector<std::filesystem::path> model_files(const std::filesystem::path& model_path);
std::vector<StoredTensorRange> stored_tensors(const std::filesystem::path& file);

}  // namespace gptoss

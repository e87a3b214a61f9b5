#pragma once
// A GGUF model that may be split over several files (<stem>-00001-of-0000N.gguf, keys split.no
// UINT16, split.count UINT16, split.tensors.count INT32), read as one: metadata from the first
// file, tensors from all of them.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "formats/gguf/gguf_file.h"

namespace gptoss {

struct GgufTensorRef {
  const GgufFile* file;
  const GgufTensorInfo* info;
};

class GgufModelFiles {
 public:
  // `path` is a single GGUF or any shard of a split set (the others are found beside it).
  static GgufModelFiles open(const std::filesystem::path& path);
  // Already-parsed files in shard order (tests): checked the same way.
  static GgufModelFiles from_files(std::vector<GgufFile> files);
  // The tensor refs point into files_: moving keeps the vector's buffer, copying would not.
  GgufModelFiles(GgufModelFiles&&) = default;
  GgufModelFiles& operator=(GgufModelFiles&&) = default;
  GgufModelFiles(const GgufModelFiles&) = delete;
  GgufModelFiles& operator=(const GgufModelFiles&) = delete;

  const GgufFile& metadata() const { return files_.front(); }
  const std::vector<GgufFile>& files() const { return files_; }
  const std::vector<GgufTensorRef>& tensors() const { return tensors_; }  // shard by shard, data order
  const GgufTensorRef* find_tensor(std::string_view name) const;

 private:
  GgufModelFiles() = default;
  void index();
  std::vector<GgufFile> files_;
  std::vector<GgufTensorRef> tensors_;
  std::map<std::string, size_t, std::less<>> by_name_;
};

}  // namespace gptoss

#pragma once
// One tensor as a container file stores it: its name there and its bytes' range in the file.
// Each container lists its own (SafetensorsFile, GgufFile, ModelBinFile::stored_tensors);
// convert/model_io lists any file's.
#include <cstdint>
#include <string>

namespace gptoss {

struct StoredTensorRange {
  std::string name;
  uint64_t offset;  // absolute in the file
  uint64_t size;
};

}  // namespace gptoss

#include "verify/stored_tensors.h"

#include <algorithm>
#include <fstream>

#include "convert/model_io.h"
#include "formats/safetensors/safetensors_file.h"

namespace gptoss {
namespace fs = std::filesystem;

std::vector<fs::path> model_files(const fs::path& model_path) {
  std::vector<fs::path> files;
  if (fs::is_directory(model_path)) {
    for (const auto& e : fs::directory_iterator(model_path)) {
      const auto ext = e.path().extension();
      if (e.is_regular_file() && (ext == ".safetensors" || ext == ".json")) files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    return files;
  }
  files.push_back(model_path);
  return files;
}

std::vector<StoredTensorRange> stored_tensors(const fs::path& file) {
  std::vector<StoredTensorRange> out;
  if (file.extension() == ".safetensors") {
    const auto st = SafetensorsFile::open(file);
    for (const auto& t : st.tensors()) out.push_back({t.name, st.data_offset() + t.begin, t.size()});
  }
  // GGUF and model.bin tensor ranges come from their container readers (added with them).
  return out;
}

}  // namespace gptoss

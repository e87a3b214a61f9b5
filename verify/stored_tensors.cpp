#include "verify/stored_tensors.h"

#include <algorithm>
#include <fstream>

#include "formats/gguf/gguf_file.h"
#include "formats/gguf/gguf_split.h"
#include "formats/modelbin/modelbin_file.h"
#include "formats/safetensors/safetensors_file.h"

namespace gptoss {
namespace fs = std::filesystem;

namespace {
bool starts_with_magic(const fs::path& file, std::string_view magic) {
  std::ifstream in(file, std::ios::binary);
  std::string head(magic.size(), '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  return in.gcount() == static_cast<std::streamsize>(magic.size()) && head == magic;
}
}  // namespace

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
  if (starts_with_magic(model_path, "GGUF")) {
    // A split set is checked as a whole: every shard, found from any one of them.
    const auto set = GgufModelFiles::open(model_path);
    for (const auto& f : set.files()) files.emplace_back(f.path());
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
  } else if (starts_with_magic(file, "GGUF")) {
    const auto gguf = GgufFile::open(file);
    for (const auto& t : gguf.tensors()) out.push_back({t.name, gguf.data_offset() + t.offset, t.size});
  } else if (starts_with_magic(file, "GPT-OSS v1.0")) {
    const auto bin = modelbin::ModelBinFile::open(file);
    for (const auto& r : bin.layout().write_order()) out.push_back({r.name, r.region.offset, r.region.size});
  }
  return out;
}

}  // namespace gptoss

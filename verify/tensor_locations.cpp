#include "verify/tensor_locations.h"

#include <map>

#include "convert/model_io.h"

namespace gptoss {
namespace fs = std::filesystem;

namespace {

struct StoredFile {
  fs::path path;
  std::map<std::string, StoredTensorRange> tensors;
  uintptr_t mapping_base = 0;  // address of file byte 0 in the readers' mapping, once known
  bool base_conflict = false;  // two in-place tensors disagree: trust no element offset
  uint64_t size = 0;
};

// The stored tensor name inside a canonical tensor's origin ("<file>:<stored name>[ (Q rows)]"
// or "<file>:<name> + <second tensor>"), without the file and the suffix.
std::string stored_name_of(const std::string& origin_rest) {
  std::string name = origin_rest;
  if (const auto plus = name.find(" + "); plus != std::string::npos) name.resize(plus);
  if (!name.empty() && name.back() == ')')
    if (const auto paren = name.rfind(" ("); paren != std::string::npos) name.resize(paren);
  return name;
}

const StoredTensorRange* find_stored(const StoredFile& file, const std::string& name) {
  if (auto it = file.tensors.find(name); it != file.tensors.end()) return &it->second;
  // model.bin stores the experts of a block expert by expert: "block 2 mlp1 blocks" (all
  // experts) starts with "block 2 expert 0 mlp1 blocks".
  if (name.rfind("block ", 0) == 0)
    if (const auto space = name.find(' ', 6); space != std::string::npos) {
      const std::string first_expert = name.substr(0, space + 1) + "expert 0" + name.substr(space);
      if (auto it = file.tensors.find(first_expert); it != file.tensors.end()) return &it->second;
    }
  return nullptr;
}

}  // namespace

std::vector<std::optional<TensorLocation>> locate_tensors(const CanonicalModel& model, const fs::path& model_path) {
  std::vector<StoredFile> files;
  for (const auto& path : model_files(model_path)) {
    StoredFile f{path, {}, 0, false, fs::file_size(path)};
    for (auto& t : stored_tensors(path)) f.tensors.emplace(t.name, t);
    if (!f.tensors.empty()) files.push_back(std::move(f));
  }
  struct Match {
    StoredFile* file = nullptr;
    const StoredTensorRange* stored = nullptr;
  };
  std::vector<Match> matches(model.tensors.size());
  for (size_t i = 0; i < model.tensors.size(); ++i) {
    const std::string& origin = model.tensors[i].origin;
    for (auto& f : files)
      for (const std::string& prefix : {f.path.string() + ":", f.path.filename().string() + ":"})
        if (!matches[i].file && origin.rfind(prefix, 0) == 0)
          if (const auto* s = find_stored(f, stored_name_of(origin.substr(prefix.size())))) matches[i] = {&f, s};
  }
  // A tensor that is a whole stored tensor read in place tells where its file is mapped; every
  // other in-place view of that file (a Q/K/V row slice) then has an exact offset too.
  for (size_t i = 0; i < model.tensors.size(); ++i) {
    const auto view = model.tensors[i].source->contiguous();
    auto& m = matches[i];
    if (!m.file || !view || view->size() != m.stored->size || m.stored->size == 0) continue;
    const uintptr_t base = reinterpret_cast<uintptr_t>(view->data()) - m.stored->offset;
    if (m.file->mapping_base && m.file->mapping_base != base) m.file->base_conflict = true;
    m.file->mapping_base = base;
  }
  std::vector<std::optional<TensorLocation>> out(model.tensors.size());
  for (size_t i = 0; i < model.tensors.size(); ++i) {
    const auto& m = matches[i];
    if (!m.file) continue;
    TensorLocation loc{m.file->path.string(), m.stored->offset, false};
    const auto view = model.tensors[i].source->contiguous();
    if (view && m.file->mapping_base && !m.file->base_conflict) {
      const uintptr_t at = reinterpret_cast<uintptr_t>(view->data());
      if (at >= m.file->mapping_base && at - m.file->mapping_base + view->size() <= m.file->size)
        loc = {loc.file, at - m.file->mapping_base, true};
    }
    out[i] = loc;
  }
  return out;
}

}  // namespace gptoss

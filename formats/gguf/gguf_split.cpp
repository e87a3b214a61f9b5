#include "formats/gguf/gguf_split.h"

#include <regex>

#include "formats/core/error.h"
#include "formats/gguf/gguf_writer.h"

namespace gptoss {
namespace fs = std::filesystem;

namespace {
struct SplitKeys {
  uint32_t index = 0;
  uint32_t count = 1;
  std::optional<int64_t> tensors;
};

SplitKeys split_keys(const GgufFile& f) {
  SplitKeys k;
  const GgufValue* no = f.optional("split.no", GgufType::U16);
  const GgufValue* count = f.optional("split.count", GgufType::U16);
  const GgufValue* tensors = f.optional("split.tensors.count", GgufType::I32);
  if (!count) return k;
  k.count = static_cast<uint32_t>(count->bits);
  if (k.count == 0) f.fail("split.count", f.find("split.count")->offset, "split.count is 0");
  if (!no) f.fail("split.no", std::nullopt, "split file without split.no");
  k.index = static_cast<uint32_t>(no->bits);
  if (k.index >= k.count)
    f.fail("split.no", f.find("split.no")->offset,
           "split.no " + std::to_string(k.index) + " is not below split.count " + std::to_string(k.count));
  if (tensors) k.tensors = static_cast<int32_t>(tensors->bits);
  return k;
}
}  // namespace

GgufModelFiles GgufModelFiles::open(const fs::path& path) {
  GgufFile first = GgufFile::open(path);
  const SplitKeys keys = split_keys(first);
  if (keys.count <= 1) return from_files({std::move(first)});
  // Name the whole set from this shard's name.
  static const std::regex pattern(R"((.*)-(\d{5})-of-(\d{5})\.gguf)");
  std::smatch m;
  const std::string name = path.filename().string();
  if (!std::regex_match(name, m, pattern))
    first.fail("split.count", std::nullopt,
               "file is shard " + std::to_string(keys.index + 1) + " of " + std::to_string(keys.count) +
                   " but its name does not end in -NNNNN-of-NNNNN.gguf, so the other shards cannot be found");
  if (std::stoul(m[3].str()) != keys.count || std::stoul(m[2].str()) != keys.index + 1)
    first.fail("split.no", std::nullopt, "file name " + name + " disagrees with its split.no / split.count keys");
  const fs::path stem_path = path.parent_path() / (m[1].str() + ".gguf");
  std::vector<GgufFile> files;
  for (uint32_t i = 0; i < keys.count; ++i) {
    if (i == keys.index) {
      files.push_back(first);
      continue;
    }
    const fs::path p = gguf_split_path(stem_path, i, keys.count);
    if (!fs::exists(p))
      first.fail("split.count", std::nullopt, "shard " + p.filename().string() + " of the split set is missing");
    files.push_back(GgufFile::open(p));
  }
  return from_files(std::move(files));
}

GgufModelFiles GgufModelFiles::from_files(std::vector<GgufFile> files) {
  if (files.empty()) throw std::invalid_argument("GgufModelFiles needs at least one file");
  GgufModelFiles set;
  set.files_ = std::move(files);
  const SplitKeys head = split_keys(set.files_.front());
  if (head.count != set.files_.size())
    set.files_.front().fail("split.count", std::nullopt,
                            "split.count is " + std::to_string(head.count) + " but " +
                                std::to_string(set.files_.size()) + " files were given");
  for (uint32_t i = 0; i < set.files_.size(); ++i) {
    const SplitKeys k = split_keys(set.files_[i]);
    if (k.count != head.count || k.index != i)
      set.files_[i].fail("split.no", std::nullopt,
                         "expected shard " + std::to_string(i) + " of " + std::to_string(head.count) + ", found shard " +
                             std::to_string(k.index) + " of " + std::to_string(k.count));
  }
  set.index();
  if (head.tensors && static_cast<uint64_t>(*head.tensors) != set.tensors_.size())
    set.files_.front().fail("split.tensors.count", std::nullopt,
                            "says " + std::to_string(*head.tensors) + " tensors, the shards hold " +
                                std::to_string(set.tensors_.size()));
  return set;
}

void GgufModelFiles::index() {
  tensors_.clear();
  by_name_.clear();
  for (const auto& f : files_)
    for (const auto& t : f.tensors()) {
      if (!by_name_.emplace(t.name, tensors_.size()).second)
        f.fail(t.name, t.info_offset, "tensor also appears in an earlier shard");
      tensors_.push_back({&f, &t});
    }
}

const GgufTensorRef* GgufModelFiles::find_tensor(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace gptoss

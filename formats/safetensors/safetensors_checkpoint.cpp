#include "formats/safetensors/safetensors_checkpoint.h"

#include <algorithm>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "formats/core/error.h"
#include "formats/core/json_file.h"
#include "formats/core/json_value.h"

namespace gptoss {
namespace fs = std::filesystem;

CheckpointShards find_checkpoint_shards(const fs::path& path) {
  CheckpointShards shards;
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) {
    shards.root = path.parent_path();
    shards.files.push_back(path);
  } else if (fs::is_directory(path, ec)) {
    shards.root = path;
    const fs::path index = path / "model.safetensors.index.json";
    if (fs::exists(index)) {
      shards.index = index;
      const nlohmann::json j = read_json_file(index);
      const JsonValue root(j, index.string());
      if (!root.is_object()) root.fail_expected("an object with a weight_map");
      const JsonValue map = root.at("weight_map");
      if (!map.is_object()) map.fail_expected("an object of tensor name -> shard file name");
      std::set<std::string> files;
      for (const auto& [name, file] : map.members()) {
        const std::string& shard = file.as_string();
        if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..")
          file.fail("shard name " + json_quoted(shard) + " must be a plain file name in the folder");
        shards.weight_map[std::string(name)] = shard;
        files.insert(shard);
      }
      for (const auto& f : files) shards.files.push_back(path / f);
      // total_size is informative (transformers does not read it); kept for verify's check.
      if (const auto metadata = root.find("metadata"); metadata && metadata->is_object())
        if (const auto total = metadata->find("total_size")) shards.index_total_size = total->raw();
    } else {
      for (const auto& entry : fs::directory_iterator(path))
        if (entry.is_regular_file() && entry.path().extension() == ".safetensors") shards.files.push_back(entry.path());
      std::sort(shards.files.begin(), shards.files.end());
      if (shards.files.empty())
        throw_format_error(path.string(), "", std::nullopt, "folder holds no *.safetensors file and no index");
    }
  } else {
    throw_format_error(path.string(), "", std::nullopt, "no such file or folder");
  }
  return shards;
}

SafetensorsCheckpoint SafetensorsCheckpoint::open(const fs::path& path) {
  SafetensorsCheckpoint ck;
  ck.shards_ = find_checkpoint_shards(path);
  ck.root_ = ck.shards_.root;
  const auto& shard_paths = ck.shards_.files;
  const auto& weight_map = ck.shards_.weight_map;
  const bool has_index = ck.has_index();

  for (const auto& p : shard_paths) ck.files_.push_back(std::make_unique<SafetensorsFile>(SafetensorsFile::open(p)));
  for (const auto& f : ck.files_) {
    const std::string fname = fs::path(f->path()).filename().string();
    for (const auto& t : f->tensors()) {
      if (has_index) {
        auto it = weight_map.find(t.name);
        if (it == weight_map.end())
          throw_format_error(f->path(), "tensor \"" + t.name + "\"", std::nullopt,
                             "is not listed in model.safetensors.index.json");
        if (it->second != fname) continue;  // the index says another shard owns it
      }
      if (!ck.tensors_.emplace(t.name, CheckpointTensorRef{f.get(), &t}).second)
        throw_format_error(f->path(), "tensor \"" + t.name + "\"", std::nullopt, "appears in more than one shard");
      ck.names_.push_back(t.name);
    }
  }
  for (const auto& [name, shard] : weight_map)
    if (!ck.tensors_.count(name))
      throw_format_error((path / shard).string(), "tensor \"" + name + "\"", std::nullopt,
                         "listed in the index but not present in its shard");
  return ck;
}

const CheckpointTensorRef* SafetensorsCheckpoint::find(std::string_view name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

const CheckpointTensorRef& SafetensorsCheckpoint::get(std::string_view name) const {
  auto* ref = find(name);
  if (!ref) throw_format_error(root_.string(), "tensor \"" + std::string(name) + "\"", std::nullopt, "missing");
  return *ref;
}

}  // namespace gptoss

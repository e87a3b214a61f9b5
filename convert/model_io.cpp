#include "convert/model_io.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <stdexcept>
#include <set>

#include "convert/gguf/gguf_model.h"
#include "convert/modelbin/modelbin_model.h"
#include "convert/synth_spec.h"
#include "formats/core/atomic_file.h"
#include "formats/core/error.h"
#include "formats/core/mapped_file.h"
#include "formats/gguf/gguf_file.h"
#include "formats/gguf/gguf_split.h"
#include "formats/modelbin/modelbin_file.h"
#include "formats/safetensors/safetensors_checkpoint.h"

namespace gptoss {
namespace fs = std::filesystem;

std::string format_name(ModelFormat f) {
  switch (f) {
    case ModelFormat::Safetensors: return "safetensors";
    case ModelFormat::Gguf: return "GGUF";
    case ModelFormat::ModelBin: return "model.bin";
    case ModelFormat::Synthesized: return "synthesized";
  }
  return "?";
}

std::optional<ModelFormat> detect_file_format(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw_format_error(file.string(), "", std::nullopt, "cannot open");
  std::array<uint8_t, modelbin::kMagic.size()> head{};
  in.read(reinterpret_cast<char*>(head.data()), static_cast<std::streamsize>(head.size()));
  const auto got = static_cast<size_t>(in.gcount());
  if (got >= 4 && load_u32(head.data()) == kGgufMagic) return ModelFormat::Gguf;
  if (got == head.size() && head == modelbin::kMagic) return ModelFormat::ModelBin;
  if (file.extension() == ".safetensors") return ModelFormat::Safetensors;
  return std::nullopt;
}

ModelFormat detect_input_format(const fs::path& path) {
  if (is_synth_spec(path)) return ModelFormat::Synthesized;
  std::error_code ec;
  if (fs::is_directory(path, ec)) return ModelFormat::Safetensors;
  if (const auto format = detect_file_format(path)) return *format;
  throw_format_error(path.string(), "magic", 0,
                     "not a GGUF file, a model.bin or a safetensors checkpoint (unknown leading bytes)");
}

std::string model_label(const fs::path& path) {
  return format_name(detect_input_format(path)) + " " + path.filename().string();
}

std::vector<fs::path> model_files(const fs::path& model_path) {
  if (is_synth_spec(model_path)) return {};  // generated as it is read: no files
  std::vector<fs::path> files;
  if (fs::is_directory(model_path)) {
    files = find_checkpoint_shards(model_path).files;
    for (const auto& e : fs::directory_iterator(model_path))
      if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    return files;
  }
  if (detect_file_format(model_path) == ModelFormat::Gguf) {
    // A split set is one model: every shard, found from any one of them.
    const auto set = GgufModelFiles::open(model_path);
    for (const auto& f : set.files()) files.emplace_back(f.path());
    return files;
  }
  files.push_back(model_path);
  return files;
}

std::vector<StoredTensorRange> stored_tensors(const fs::path& file) {
  switch (detect_file_format(file).value_or(ModelFormat::Synthesized)) {
    case ModelFormat::Safetensors: return SafetensorsFile::open(file).stored_tensors();
    case ModelFormat::Gguf: return GgufFile::open(file).stored_tensors();
    case ModelFormat::ModelBin: return modelbin::ModelBinFile::open(file).stored_tensors();
    case ModelFormat::Synthesized: break;  // not a container file
  }
  return {};
}

ModelFormat output_format_for(const fs::path& path) {
  if (is_synth_spec(path)) return ModelFormat::Synthesized;
  const auto ext = path.extension().string();
  if (ext == ".gguf") return ModelFormat::Gguf;
  if (ext == ".bin") return ModelFormat::ModelBin;
  return ModelFormat::Safetensors;
}

namespace {
// Files of an existing output folder that a new checkpoint replaces even where it does not write
// them (a different shard count, no tokenizer); anything else there (a README) is kept.
bool is_checkpoint_file(const std::string& name) {
  static const std::set<std::string> kFixedNames = {
      "model.safetensors", "model.safetensors.index.json", "config.json", "generation_config.json",
      "tokenizer.json", "tokenizer_config.json", "chat_template.jinja"};
  return kFixedNames.count(name) > 0 || (name.starts_with("model-") && name.ends_with(".safetensors"));
}

CanonicalModel load_by_format(const fs::path& path) {
  switch (detect_input_format(path)) {
    case ModelFormat::Gguf: return load_gguf_model(path);
    case ModelFormat::ModelBin: return load_modelbin_model(path);
    case ModelFormat::Synthesized: return load_synth_spec(path);
    case ModelFormat::Safetensors: break;
  }
  return load_safetensors_model(path);
}
}  // namespace

CanonicalModel load_model(const fs::path& path) {
  const uint64_t shrink_events = MappedFile::shrink_events();
  CanonicalModel model = load_by_format(path);
  MappedFile::throw_if_shrunk_since(shrink_events);  // headers read while the file shrank are not trusted
  return model;
}

void check_write_options(ModelFormat output, const WriteOptions& options) {
  if (output == ModelFormat::Synthesized)
    throw std::invalid_argument("a model spec (synth:...) names a generated model and cannot be written to; give an "
                                "output file or folder");
  const std::string format = format_name(output);
  auto refuse = [&](const std::string& what) {
    throw std::invalid_argument(what + " cannot be honoured by a " + format + " output");
  };
  if (options.layout && output != ModelFormat::Safetensors)
    refuse("--layout (the tensor naming of a safetensors checkpoint)");
  if (options.dense_dtype) {
    const DType dense = *options.dense_dtype;
    const std::string name = "--dense " + std::string(dtype_name(dense));
    switch (output) {
      case ModelFormat::Gguf:
        if (dense != DType::BF16 && dense != DType::F16 && dense != DType::F32 && dense != DType::Q8_0)
          refuse(name + " (GGUF dense tensors are BF16, F16, F32 or Q8_0)");
        break;
      case ModelFormat::Safetensors:
        if (dense != DType::BF16 && dense != DType::F16 && dense != DType::F32)
          refuse(name + " (safetensors dense tensors are BF16, F16 or F32)");
        break;
      case ModelFormat::ModelBin:
        if (dense != DType::BF16) refuse(name + " (model.bin stores every dense tensor as BF16)");
        break;
      case ModelFormat::Synthesized: break;
    }
  }
  if (options.mix) {
    const std::string name = "--mix " + std::string(gguf_mix_info(*options.mix).name);
    if (output != ModelFormat::Gguf) refuse(name + " (llama-quantize's mixes are GGUF files)");
    if (options.dense_dtype == DType::Q8_0)
      refuse(name + " with --dense q8_0 (a mix quantizes the float GGUF llama.cpp's converter writes: --dense bf16, "
             "f16 or f32)");
  }
  if (options.max_shard_bytes && output == ModelFormat::ModelBin)
    refuse("--max-shard-size/--split-max-size (model.bin is always one file)");
}

std::vector<std::string> write_model(const CanonicalModel& model, const fs::path& path, const WriteOptions& options) {
  check_write_options(output_format_for(path), options);
  // Per-tensor progress from the writers, turned into progress over the whole output.
  uint64_t total = 0;
  for (const auto& t : model.tensors) total += t.source->size();
  uint64_t finished = 0;
  std::string current;
  uint64_t current_done = 0;
  auto per_item = [&](const std::string& item, uint64_t done, uint64_t size) {
    if (item != current) {
      finished += current_done;
      current = item;
    }
    current_done = done;
    if (options.progress) options.progress({item, std::min(finished + done, total), total});
    (void)size;
  };
  switch (output_format_for(path)) {
    case ModelFormat::Gguf: {
      GgufWriteOptions o;
      o.dense_dtype = options.dense_dtype.value_or(DType::BF16);
      o.mix = options.mix;
      o.split_max_bytes = options.max_shard_bytes;
      o.threads = options.threads;
      o.progress = per_item;
      return write_gguf_model(model, path, o);
    }
    case ModelFormat::ModelBin: {
      ModelBinWriteOptions o;
      o.threads = options.threads;
      o.progress = per_item;
      return write_modelbin_model(model, path, o);
    }
    case ModelFormat::Synthesized:  // refused by check_write_options
    case ModelFormat::Safetensors: break;
  }
  SafetensorsWriteOptions o;
  o.layout = options.layout.value_or(CheckpointLayout::HuggingFace);
  o.dense_dtype = options.dense_dtype.value_or(DType::BF16);
  o.max_shard_bytes = options.max_shard_bytes;
  o.threads = options.threads;
  o.progress = per_item;
  // The folder appears only when complete: shards, index, config and tokenizer files as one set.
  AtomicDirectory folder(path, is_checkpoint_file);
  auto notes = write_safetensors_model(model, folder.path(), o);
  folder.commit();
  return notes;
}

}  // namespace gptoss

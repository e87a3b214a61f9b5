#pragma once
// Format detection, the files of a model and the tensors each file stores, and the any-to-any
// entry points: every reader produces the canonical model, every writer consumes it. This is the
// only file that knows all formats; conversion and verify both detect and list through it.
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "convert/canonical_model.h"
#include "convert/gguf/gguf_mix.h"
#include "convert/safetensors_model.h"
#include "formats/core/stored_tensor.h"

namespace gptoss {

// Synthesized: a model spec such as synth:20b (convert/synth_spec.h), generated as it is read.
enum class ModelFormat { Safetensors, Gguf, ModelBin, Synthesized };
std::string format_name(ModelFormat format);

// What one file is, the one container detection: by its leading bytes (kGgufMagic, modelbin::kMagic),
// else a *.safetensors name (the format has no magic); nullopt for anything else (a JSON file).
// Throws FormatError when the file cannot be opened.
std::optional<ModelFormat> detect_file_format(const std::filesystem::path& file);
// Detects a folder as a safetensors checkpoint, a file by detect_file_format (FormatError naming
// the magic when it is none of ours), a model spec by its name.
ModelFormat detect_input_format(const std::filesystem::path& path);
// "GGUF model-q8_0.gguf": the format and the file name, as tables and traces label a model.
std::string model_label(const std::filesystem::path& path);

// All files of a model: the shards of a safetensors checkpoint as its reader finds them
// (find_checkpoint_shards) and the folder's *.json files, a GGUF and its split siblings, or a
// model.bin; none for a model spec. Sorted within a folder.
std::vector<std::filesystem::path> model_files(const std::filesystem::path& model_path);
// The tensors one file stores, as its container lists them (none for a file that is not a
// container, e.g. config.json).
std::vector<StoredTensorRange> stored_tensors(const std::filesystem::path& file);
// Detects by name: *.gguf, *.bin, a model spec (which no writer takes), anything else is a
// safetensors checkpoint folder.
ModelFormat output_format_for(const std::filesystem::path& path);

CanonicalModel load_model(const std::filesystem::path& path);

struct ProgressEvent {
  std::string item;     // tensor or file being written
  uint64_t done_bytes;  // over the whole output
  uint64_t total_bytes;
};

// What a writer is asked for beyond the model. An option the output format cannot honour is an
// error (std::invalid_argument naming the option), never silently ignored.
struct WriteOptions {
  std::optional<CheckpointLayout> layout;  // safetensors only (default HuggingFace)
  std::optional<DType> dense_dtype;  // GGUF: BF16/F16/F32/Q8_0; safetensors: BF16/F16/F32; model.bin: BF16
  std::optional<GgufMix> mix;        // GGUF only: llama-quantize's mix of the GGUF `dense_dtype` gives
  uint64_t max_shard_bytes = 0;      // safetensors --max-shard-size / GGUF --split-max-size
  unsigned threads = 0;              // -j: workers producing the output's bytes; 0 = one per core
  std::function<void(const ProgressEvent&)> progress;
};

// Throws std::invalid_argument when `options` asks for something the output format cannot do.
void check_write_options(ModelFormat output, const WriteOptions& options);

// Writes the model (after check_write_options); returns notes a user must see (lossy steps with measured error, dropped rows).
std::vector<std::string> write_model(const CanonicalModel& model, const std::filesystem::path& path,
                                     const WriteOptions& options);

}  // namespace gptoss

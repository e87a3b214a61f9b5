#pragma once
// Format detection and the any-to-any entry points: every reader produces the canonical model,
// every writer consumes it. This is the only file that knows all formats.
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "convert/canonical_model.h"
#include "convert/safetensors_model.h"

namespace gptoss {

// Synthesized: a model spec such as synth:20b (convert/synth_spec.h), generated as it is read.
enum class ModelFormat { Safetensors, Gguf, ModelBin, Synthesized };
std::string format_name(ModelFormat format);

// Detects by content (magic bytes) for files and by contents for folders; a model spec by its name.
ModelFormat detect_input_format(const std::filesystem::path& path);
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

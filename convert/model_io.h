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

enum class ModelFormat { Safetensors, Gguf, ModelBin };
std::string format_name(ModelFormat format);

// Detects by content (magic bytes) for files and by contents for folders.
ModelFormat detect_input_format(const std::filesystem::path& path);
// Detects by name: *.gguf, *.bin, anything else is a safetensors checkpoint folder.
ModelFormat output_format_for(const std::filesystem::path& path);

CanonicalModel load_model(const std::filesystem::path& path);

struct ProgressEvent {
  std::string item;     // tensor or file being written
  uint64_t done_bytes;  // over the whole output
  uint64_t total_bytes;
};

struct WriteOptions {
  CheckpointLayout layout = CheckpointLayout::HuggingFace;  // safetensors only
  std::optional<DType> dense_dtype;  // GGUF: BF16/F16/F32/Q8_0 (default BF16); safetensors: BF16 or F32
  uint64_t max_shard_bytes = 0;      // safetensors --max-shard-size / GGUF --split-max-size
  std::function<void(const ProgressEvent&)> progress;
};

// Writes the model; returns notes a user must see (lossy steps with measured error, dropped rows).
std::vector<std::string> write_model(const CanonicalModel& model, const std::filesystem::path& path,
                                     const WriteOptions& options);

}  // namespace gptoss

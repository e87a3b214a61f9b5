#pragma once
// GPT-OSS checkpoints in safetensors: the Hugging Face layout (model.* names, separate Q/K/V,
// MXFP4 experts as *_blocks/*_scales) and OpenAI's original/ layout (block.* names, fused QKV).
// Both map onto the canonical model without copying: Q/K/V out of a fused QKV are row slices.
#include <filesystem>
#include <functional>
#include <string>

#include "convert/canonical_model.h"

namespace gptoss {

enum class CheckpointLayout { HuggingFace, Original };

// Reads a checkpoint folder (or one .safetensors file with config.json beside it). The layout is
// detected from the tensor names. The tokenizer files in the folder or its parent are loaded too
// (hf_tokenizer_files.h).
CanonicalModel load_safetensors_model(const std::filesystem::path& path);

struct SafetensorsWriteOptions {
  CheckpointLayout layout = CheckpointLayout::HuggingFace;
  DType dense_dtype = DType::BF16;  // encoding of every non-expert tensor
  uint64_t max_shard_bytes = 0;     // 0 = one file
  unsigned threads = 0;             // workers producing the tensor data; 0 = one per core
  std::function<void(const std::string&, uint64_t done, uint64_t total)> progress;  // per tensor
};

// Writes config.json (+ generation_config.json for the HF layout), the tokenizer files when the
// model has a tokenizer (tokenizer.json, tokenizer_config.json with the chat template; in both
// layouts, so that nothing of the tokenizer is lost) and the weights, the experts as the MXFP4
// pair (requantized where they are in another type: with_mxfp4_experts). Returns notes about
// lossy steps (with measured error) and about anything not written.
std::vector<std::string> write_safetensors_model(const CanonicalModel& model, const std::filesystem::path& dir,
                                                 const SafetensorsWriteOptions& options);

// The name a canonical tensor has in a layout (for Q/K/V in the original layout: the fused name).
std::string layout_tensor_name(CheckpointLayout layout, TensorRole role, int layer);

}  // namespace gptoss

#pragma once
// GPT-OSS <-> GGUF v3 (llama.cpp's gpt-oss arch). See docs/formats.md and shared/specs/gguf.md.
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "convert/canonical_model.h"
#include "convert/gguf/gguf_mix.h"

namespace gptoss {

// Reads a GGUF file (or the first shard of a split set) into the canonical model.
CanonicalModel load_gguf_model(const std::filesystem::path& path);

struct GgufWriteOptions {
  DType dense_dtype = DType::BF16;  // token_embd, output, attn q/k/v/o: BF16, F16, F32 or Q8_0
  // llama-quantize's mix of the GGUF with dense_dtype (BF16, F16 or F32), written in one pass: the
  // dense matrices in the mix's types (gguf_mix.h), keys and tensor order as llama-quantize writes them.
  std::optional<GgufMix> mix;
  uint64_t split_max_bytes = 0;     // 0 = one file
  std::string name;                 // general.name; empty = "gpt-oss"
  unsigned threads = 0;             // workers producing the tensor data; 0 = one per core
  std::function<void(const std::string& item, uint64_t done, uint64_t total)> progress;
};

std::vector<std::string> write_gguf_model(const CanonicalModel& model, const std::filesystem::path& path,
                                          const GgufWriteOptions& options);

}  // namespace gptoss

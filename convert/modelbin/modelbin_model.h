#pragma once
// GPT-OSS <-> the Metal runtime's model.bin. See docs/modelbin.md and shared/specs/modelbin.md.
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "convert/canonical_model.h"

namespace gptoss {
namespace modelbin {
class ModelBinFile;
}

// Reads a model.bin: every transform of OpenAI's writer is undone (Q/K rows back to half-split
// order and x2 / x4, scale bytes - 14, experts regrouped expert-major). vocab_size is the file's
// 200014; model.notes says so.
CanonicalModel load_modelbin_model(const std::filesystem::path& path);
CanonicalModel canonical_from_modelbin(const std::shared_ptr<const modelbin::ModelBinFile>& file);

struct ModelBinWriteOptions {
  unsigned threads = 0;  // workers producing the tensor data; 0 = one per core
  std::function<void(const std::string& item, uint64_t done, uint64_t total)> progress;
};

// Writes the file OpenAI's create-local-model.py would write (byte for byte for BF16 inputs).
// Refuses (std::invalid_argument / FormatError, no output left behind) what the format cannot
// hold: head_dim != 64, experts_per_token != 4, a non-alternating attention pattern, scale bytes
// >= 242, a vocabulary or tokenizer smaller than o200k_harmony's 200014 ids, no tokenizer.
// Experts in another type than MXFP4 are requantized to the pair (with_mxfp4_experts). Returns
// notes (truncated vocabulary, lossy dtype changes and requantized experts with measured error).
std::vector<std::string> write_modelbin_model(const CanonicalModel& model, const std::filesystem::path& path,
                                              const ModelBinWriteOptions& options);

}  // namespace gptoss

#pragma once
// GPT-OSS <-> the Metal runtime's model.bin. See docs/formats.md and shared/specs/modelbin.md.
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "convert/canonical_model.h"

namespace gptoss {

CanonicalModel load_modelbin_model(const std::filesystem::path& path);

struct ModelBinWriteOptions {
  std::function<void(const std::string& item, uint64_t done, uint64_t total)> progress;
};

std::vector<std::string> write_modelbin_model(const CanonicalModel& model, const std::filesystem::path& path,
                                              const ModelBinWriteOptions& options);

}  // namespace gptoss

#pragma once
// Where each canonical tensor lies in the model's files, so a value finding can name a byte
// offset: the start of the stored tensor it comes from and, when the canonical encoding is those
// very bytes (no repack, prescale or scale offset in between), the offset of any element.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "convert/canonical_model.h"

namespace gptoss {

struct TensorLocation {
  std::string file;
  uint64_t offset = 0;  // first byte of the stored bytes the tensor comes from
  // True when canonical byte k of the tensor is file byte offset + k.
  bool verbatim = false;
  // File offset of a canonical byte when verbatim, else the tensor's start.
  uint64_t byte(uint64_t canonical_byte) const { return verbatim ? offset + canonical_byte : offset; }
};

// One entry per model.tensors[i]; nullopt where the origin names no stored tensor.
std::vector<std::optional<TensorLocation>> locate_tensors(const CanonicalModel& model,
                                                          const std::filesystem::path& model_path);

}  // namespace gptoss

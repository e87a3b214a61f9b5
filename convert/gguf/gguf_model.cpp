// Placeholder until the GGUF conversion lands (issue 3).
#include "convert/gguf/gguf_model.h"

#include <stdexcept>

namespace gptoss {
CanonicalModel load_gguf_model(const std::filesystem::path& path) {
  throw std::runtime_error(path.string() + ": GGUF reading is not implemented yet");
}
std::vector<std::string> write_gguf_model(const CanonicalModel&, const std::filesystem::path& path, const GgufWriteOptions&) {
  throw std::runtime_error(path.string() + ": GGUF writing is not implemented yet");
}
}  // namespace gptoss

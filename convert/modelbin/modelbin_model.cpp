// Placeholder until the model.bin conversion lands (issue 4).
#include "convert/modelbin/modelbin_model.h"

#include <stdexcept>

namespace gptoss {
CanonicalModel load_modelbin_model(const std::filesystem::path& path) {
  throw std::runtime_error(path.string() + ": model.bin reading is not implemented yet");
}
std::vector<std::string> write_modelbin_model(const CanonicalModel&, const std::filesystem::path& path, const ModelBinWriteOptions&) {
  throw std::runtime_error(path.string() + ": model.bin writing is not implemented yet");
}
}  // namespace gptoss

#include "tools/common/cli_options.h"

#include <stdexcept>

#include "formats/core/mapped_file.h"

namespace gptoss {

void refuse_if_given(const CLI::App& app, std::initializer_list<const char*> names, const std::string& why) {
  for (const char* name : names)
    if (app.count(name) > 0) throw std::invalid_argument(std::string(name) + " " + why);
}

void refuse_device_unless_vulkan(const std::optional<uint32_t>& device, const std::string& engine_name) {
  if (device && engine_name != "vulkan")
    throw std::invalid_argument("--device picks a Vulkan device and the " + engine_name +
                                " engine runs on the CPU: add --engine vulkan");
}

std::string read_text_file(const std::string& path) {
  const auto file = MappedFile::open(path);
  const auto bytes = file->bytes();
  return {bytes.begin(), bytes.end()};
}

}  // namespace gptoss

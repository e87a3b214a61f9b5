#include "tools/common/cli_options.h"

#include <filesystem>
#include <stdexcept>

#include "convert/model_io.h"

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

std::string engine_label(const std::string& engine, const std::string& kv_cache) {
  return kv_cache == "f32" ? engine : engine + " (" + kv_cache + " KV cache)";
}

std::string model_label(const std::string& path) {
  return format_name(detect_input_format(path)) + " " + std::filesystem::path(path).filename().string();
}

}  // namespace gptoss

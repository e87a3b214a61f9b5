// make_engine: the one place that knows every engine class (and the Vulkan device list).
#include <stdexcept>

#include "runtime/cpu/cpu_engine.h"
#include "runtime/engine.h"
#include "runtime/vulkan/vulkan_engine.h"

namespace gptoss::runtime {

std::unique_ptr<Engine> make_engine(EngineKind kind, const CanonicalModel& model, const EngineOptions& options) {
  switch (kind) {
    case EngineKind::Cpu: return std::make_unique<cpu::CpuEngine>(model, cpu::CpuPrecision::F32, options.max_context);
    case EngineKind::CpuF64: return std::make_unique<cpu::CpuEngine>(model, cpu::CpuPrecision::F64, options.max_context);
    case EngineKind::Vulkan: return std::make_unique<vk::VulkanEngine>(model, options);
  }
  throw std::invalid_argument("unknown engine kind");
}

std::vector<DeviceDescription> list_vulkan_devices() {
  std::vector<DeviceDescription> all;
  for (const auto& info : vk::Context::list_devices())
    all.push_back({info.index, info.name, vk::device_type_name(info.type), info.driver, info.device_local_bytes,
                   info.subgroup_size, info.max_storage_buffer_range, info.has_compute});
  return all;
}

}  // namespace gptoss::runtime

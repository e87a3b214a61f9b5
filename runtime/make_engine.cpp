// make_engine: the one place that knows every engine class (and the Vulkan device list).
#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>

#include "runtime/cpu/cpu_engine.h"
#include "runtime/engine.h"
#include "runtime/vulkan/vulkan_engine.h"

namespace gptoss::runtime {

namespace {
// The options only the Vulkan engine reads are refused for the CPU engine rather than ignored.
void refuse_vulkan_options(EngineKind kind, const EngineOptions& options) {
  const std::string engine(engine_kind_name(kind));
  if (options.device_index)
    throw std::invalid_argument("EngineOptions::device_index " + std::to_string(*options.device_index) +
                                " picks a Vulkan device, and the " + engine + " engine runs on the CPU");
  if (options.prefill_chunk != EngineOptions{}.prefill_chunk)
    throw std::invalid_argument("EngineOptions::prefill_chunk " + std::to_string(options.prefill_chunk) +
                                " sets the Vulkan engine's prefill batches; the " + engine + " engine has none");
  if (!(options.vulkan == VulkanTuning{}))
    throw std::invalid_argument("EngineOptions::vulkan sets how the Vulkan engine computes; the " + engine +
                                " engine runs on the CPU");
}
}  // namespace

struct SharedDevices::Contexts {
  // By what opens a context: the device asked for and the context's switches.
  std::map<std::tuple<std::optional<uint32_t>, bool, bool>, std::shared_ptr<vk::Context>> opened;
};
SharedDevices::SharedDevices() : contexts_(std::make_unique<Contexts>()) {}
SharedDevices::~SharedDevices() = default;

std::unique_ptr<Engine> make_engine(EngineKind kind, const CanonicalModel& model, const EngineOptions& options,
                                    SharedDevices* shared) {
  if (kind != EngineKind::Vulkan) refuse_vulkan_options(kind, options);
  if (kind == EngineKind::Vulkan && shared) {
    const bool coop = options.vulkan.cooperative_matrix, stats = options.vulkan.pipeline_statistics;
    auto& ctx = shared->contexts_->opened[{options.device_index, coop, stats}];
    if (!ctx) ctx = vk::Context::create(options.device_index, {coop, stats});
    return std::make_unique<vk::VulkanEngine>(model, options, ctx);
  }
  switch (kind) {
    case EngineKind::Cpu:
      return std::make_unique<cpu::CpuEngine>(model, cpu::CpuPrecision::F32, options.max_context, options.kv_cache);
    case EngineKind::CpuF64:
      return std::make_unique<cpu::CpuEngine>(model, cpu::CpuPrecision::F64, options.max_context, options.kv_cache);
    case EngineKind::Vulkan: return std::make_unique<vk::VulkanEngine>(model, options);
  }
  throw std::invalid_argument("unknown engine kind");
}

std::vector<DeviceDescription> list_vulkan_devices() {
  std::vector<DeviceDescription> all;
  for (const auto& info : vk::Context::list_devices())
    all.push_back({info.index, info.name, vk::device_type_name(info.type), info.driver, info.device_local_bytes,
                   info.subgroup_size, info.max_storage_buffer_range, info.has_compute,
                   info.integer_dot_product_accelerated ? "accelerated"
                   : info.integer_dot_product           ? "supported"
                                                        : "none",
                   info.float64, vk::cooperative_matrix_forms(info)});
  return all;
}

void check_device_list(std::span<const uint32_t> indices, std::span<const DeviceDescription> devices) {
  const DeviceDescription* first = nullptr;
  for (const uint32_t index : indices) {
    const auto found = std::find_if(devices.begin(), devices.end(), [&](const auto& d) { return d.index == index; });
    if (found == devices.end())
      throw std::invalid_argument("Vulkan: no device " + std::to_string(index) + " (there are " +
                                  std::to_string(devices.size()) + "; gptoss-run --list-devices)");
    if (!found->usable) throw std::invalid_argument("Vulkan: device " + std::to_string(index) + " has no compute queue");
    const auto named = [](const DeviceDescription& d) {
      return "device " + std::to_string(d.index) + " (" + d.name + ", driver " + d.driver + ")";
    };
    if (!first)
      first = &*found;
    else if (found->name != first->name || found->driver != first->driver)
      throw std::invalid_argument(named(*first) + " and " + named(*found) +
                                  " differ: engines on different devices may differ in their last bits, which a "
                                  "comparison would count as the models' difference");
  }
}

}  // namespace gptoss::runtime

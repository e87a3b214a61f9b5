#include "runtime/vulkan/vulkan_context.h"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <utility>

#include "shaders/shader_registry.h"

namespace gptoss::vk {

void check(VkResult result, const char* what) {
  if (result != VK_SUCCESS) throw std::runtime_error(std::string("Vulkan: ") + what + " failed (VkResult " + std::to_string(result) + ")");
}

namespace {

struct Instance {
  VkInstance handle = VK_NULL_HANDLE;
  Instance() {
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "gptoss";
    app.apiVersion = VK_API_VERSION_1_2;
    VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ici.pApplicationInfo = &app;
    check(vkCreateInstance(&ici, nullptr, &handle), "vkCreateInstance (is a Vulkan driver installed?)");
  }
  ~Instance() {
    if (handle) vkDestroyInstance(handle, nullptr);
  }
  VkInstance release() { return std::exchange(handle, VK_NULL_HANDLE); }
  std::vector<VkPhysicalDevice> devices() const {
    uint32_t count = 0;
    vkEnumeratePhysicalDevices(handle, &count, nullptr);
    std::vector<VkPhysicalDevice> all(count);
    vkEnumeratePhysicalDevices(handle, &count, all.data());
    all.resize(count);
    return all;
  }
};

// The first queue family with compute, or none.
std::optional<uint32_t> compute_family(VkPhysicalDevice device) {
  uint32_t count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(device, &count, nullptr);
  std::vector<VkQueueFamilyProperties> families(count);
  vkGetPhysicalDeviceQueueFamilyProperties(device, &count, families.data());
  for (uint32_t f = 0; f < count; ++f)
    if (families[f].queueFlags & VK_QUEUE_COMPUTE_BIT) return f;
  return std::nullopt;
}

DeviceInfo describe(VkPhysicalDevice device, uint32_t index) {
  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  subgroup.pNext = &driver;
  VkPhysicalDeviceProperties2 props2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props2.pNext = &subgroup;
  vkGetPhysicalDeviceProperties2(device, &props2);
  VkPhysicalDeviceMemoryProperties memory;
  vkGetPhysicalDeviceMemoryProperties(device, &memory);
  DeviceInfo info;
  info.index = index;
  info.name = props2.properties.deviceName;
  info.driver = std::string(driver.driverName) + " " + driver.driverInfo;
  info.vendor_id = props2.properties.vendorID;
  info.type = props2.properties.deviceType;
  info.subgroup_size = subgroup.subgroupSize;
  info.max_storage_buffer_range = props2.properties.limits.maxStorageBufferRange;
  info.timestamp_period_ns = props2.properties.limits.timestampPeriod;
  for (uint32_t h = 0; h < memory.memoryHeapCount; ++h)
    if (memory.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      info.device_local_bytes = std::max<uint64_t>(info.device_local_bytes, memory.memoryHeaps[h].size);
  if (auto family = compute_family(device)) {
    info.has_compute = true;
    uint32_t count = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(device, &count, nullptr);
    std::vector<VkQueueFamilyProperties> families(count);
    vkGetPhysicalDeviceQueueFamilyProperties(device, &count, families.data());
    info.compute_timestamps = families[*family].timestampValidBits > 0;
  }
  return info;
}

int type_preference(VkPhysicalDeviceType type) {
  return type == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU ? 3 : type == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ? 2 : 1;
}

}  // namespace

const char* device_type_name(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "CPU";
    default: return "other";
  }
}

std::vector<DeviceInfo> Context::list_devices() {
  Instance instance;
  std::vector<DeviceInfo> infos;
  const auto devices = instance.devices();
  for (uint32_t i = 0; i < devices.size(); ++i) infos.push_back(describe(devices[i], i));
  return infos;
}

std::unique_ptr<Context> Context::create(std::optional<uint32_t> device_index) {
  std::unique_ptr<Context> ctx(new Context());
  Instance instance;
  const auto devices = instance.devices();
  if (devices.empty()) throw std::runtime_error("Vulkan: no physical device found");
  std::optional<uint32_t> chosen;
  if (device_index) {
    if (*device_index >= devices.size())
      throw std::runtime_error("Vulkan: no device " + std::to_string(*device_index) + " (there are " +
                               std::to_string(devices.size()) + "; --list-devices lists them)");
    if (!compute_family(devices[*device_index]))
      throw std::runtime_error("Vulkan: device " + std::to_string(*device_index) + " has no compute queue");
    chosen = *device_index;
  } else {
    int best_score = -1;
    for (uint32_t i = 0; i < devices.size(); ++i) {
      if (!compute_family(devices[i])) continue;
      VkPhysicalDeviceProperties props;
      vkGetPhysicalDeviceProperties(devices[i], &props);
      if (type_preference(props.deviceType) > best_score) {
        best_score = type_preference(props.deviceType);
        chosen = i;
      }
    }
    if (!chosen) throw std::runtime_error("Vulkan: no device with a compute queue");
  }
  ctx->instance_ = instance.release();
  ctx->physical_ = devices[*chosen];
  ctx->queue_family_ = *compute_family(ctx->physical_);
  ctx->info_ = describe(ctx->physical_, *chosen);
  vkGetPhysicalDeviceMemoryProperties(ctx->physical_, &ctx->memory_);

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = ctx->queue_family_;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  check(vkCreateDevice(ctx->physical_, &dci, nullptr, &ctx->device_), "vkCreateDevice");
  vkGetDeviceQueue(ctx->device_, ctx->queue_family_, 0, &ctx->queue_);
  VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pci.queueFamilyIndex = ctx->queue_family_;
  check(vkCreateCommandPool(ctx->device_, &pci, nullptr, &ctx->pool_), "vkCreateCommandPool");
  return ctx;
}

Context::~Context() {
  if (device_) {
    vkDeviceWaitIdle(device_);
    vkDestroyCommandPool(device_, pool_, nullptr);
    vkDestroyDevice(device_, nullptr);
  }
  if (instance_) vkDestroyInstance(instance_, nullptr);
}

uint32_t Context::memory_type(uint32_t type_bits, VkMemoryPropertyFlags flags) const {
  for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i)
    if ((type_bits & (1u << i)) && (memory_.memoryTypes[i].propertyFlags & flags) == flags) return i;
  throw std::runtime_error("Vulkan: no memory type with the needed properties");
}

void Context::run_once(const std::function<void(VkCommandBuffer)>& record) const {
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = pool_;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cb;
  check(vkAllocateCommandBuffers(device_, &ai, &cb), "vkAllocateCommandBuffers");
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  vkBeginCommandBuffer(cb, &bi);
  record(cb);
  vkEndCommandBuffer(cb);
  VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkFence fence;
  check(vkCreateFence(device_, &fci, nullptr, &fence), "vkCreateFence");
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cb;
  check(vkQueueSubmit(queue_, 1, &si, fence), "vkQueueSubmit");
  check(vkWaitForFences(device_, 1, &fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
  vkDestroyFence(device_, fence, nullptr);
  vkFreeCommandBuffers(device_, pool_, 1, &cb);
}

void Context::dispatch_once(const Pipeline& pipeline, std::span<const Buffer* const> buffers, const void* push,
                            uint32_t push_bytes, uint32_t gx, uint32_t gy, uint32_t gz) const {
  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, static_cast<uint32_t>(buffers.size())};
  VkDescriptorPoolCreateInfo dpci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  dpci.maxSets = 1;
  dpci.poolSizeCount = 1;
  dpci.pPoolSizes = &size;
  VkDescriptorPool dpool;
  check(vkCreateDescriptorPool(device_, &dpci, nullptr, &dpool), "vkCreateDescriptorPool");
  VkDescriptorSetLayout sl = pipeline.set_layout();
  VkDescriptorSetAllocateInfo dsai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  dsai.descriptorPool = dpool;
  dsai.descriptorSetCount = 1;
  dsai.pSetLayouts = &sl;
  VkDescriptorSet set;
  check(vkAllocateDescriptorSets(device_, &dsai, &set), "vkAllocateDescriptorSets");
  std::vector<VkDescriptorBufferInfo> infos(buffers.size());
  std::vector<VkWriteDescriptorSet> writes(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    infos[i] = {buffers[i]->handle(), 0, VK_WHOLE_SIZE};
    writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstSet = set;
    writes[i].dstBinding = static_cast<uint32_t>(i);
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  vkUpdateDescriptorSets(device_, static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);
  run_once([&](VkCommandBuffer cb) {
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.handle());
    vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.layout(), 0, 1, &set, 0, nullptr);
    if (push_bytes) vkCmdPushConstants(cb, pipeline.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes, push);
    vkCmdDispatch(cb, gx, gy, gz);
  });
  vkDestroyDescriptorPool(device_, dpool, nullptr);
}

Buffer::Buffer(const Context& ctx, uint64_t size, bool host_visible) : ctx_(ctx), size_(size) {
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = size;
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check(vkCreateBuffer(ctx.device(), &bci, nullptr, &buffer_), "vkCreateBuffer");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(ctx.device(), buffer_, &req);
  VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = ctx.memory_type(req.memoryTypeBits, host_visible
                                                                 ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
                                                                 : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  check(vkAllocateMemory(ctx.device(), &mai, nullptr, &memory_), "vkAllocateMemory");
  allocated_ = req.size;
  ctx.allocated_ += allocated_;
  check(vkBindBufferMemory(ctx.device(), buffer_, memory_, 0), "vkBindBufferMemory");
  if (host_visible) check(vkMapMemory(ctx.device(), memory_, 0, VK_WHOLE_SIZE, 0, &mapped_), "vkMapMemory");
}

Buffer::~Buffer() {
  ctx_.allocated_ -= allocated_;
  if (mapped_) vkUnmapMemory(ctx_.device(), memory_);
  vkDestroyBuffer(ctx_.device(), buffer_, nullptr);
  vkFreeMemory(ctx_.device(), memory_, nullptr);
}

Pipeline::Pipeline(const Context& ctx, const std::string& shader_name, uint32_t bindings, uint32_t push_bytes)
    : ctx_(ctx), name_(shader_name), bindings_(bindings) {
  const auto& registry = shader_registry();
  auto it = registry.find(shader_name);
  if (it == registry.end()) throw std::runtime_error("no embedded shader named " + shader_name);
  VkShaderModuleCreateInfo smci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  smci.codeSize = it->second.size() * sizeof(uint32_t);
  smci.pCode = it->second.data();
  check(vkCreateShaderModule(ctx.device(), &smci, nullptr, &module_), "vkCreateShaderModule");
  std::vector<VkDescriptorSetLayoutBinding> b(bindings);
  for (uint32_t i = 0; i < bindings; ++i)
    b[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  VkDescriptorSetLayoutCreateInfo dslci{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  dslci.bindingCount = bindings;
  dslci.pBindings = b.data();
  check(vkCreateDescriptorSetLayout(ctx.device(), &dslci, nullptr, &set_layout_), "vkCreateDescriptorSetLayout");
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes};
  VkPipelineLayoutCreateInfo plci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  plci.setLayoutCount = 1;
  plci.pSetLayouts = &set_layout_;
  plci.pushConstantRangeCount = push_bytes ? 1 : 0;
  plci.pPushConstantRanges = &range;
  check(vkCreatePipelineLayout(ctx.device(), &plci, nullptr, &layout_), "vkCreatePipelineLayout");
  VkComputePipelineCreateInfo cpci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  cpci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  cpci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  cpci.stage.module = module_;
  cpci.stage.pName = "main";
  cpci.layout = layout_;
  check(vkCreateComputePipelines(ctx.device(), VK_NULL_HANDLE, 1, &cpci, nullptr, &pipeline_), "vkCreateComputePipelines");
}

Pipeline::~Pipeline() {
  vkDestroyPipeline(ctx_.device(), pipeline_, nullptr);
  vkDestroyPipelineLayout(ctx_.device(), layout_, nullptr);
  vkDestroyDescriptorSetLayout(ctx_.device(), set_layout_, nullptr);
  vkDestroyShaderModule(ctx_.device(), module_, nullptr);
}

}  // namespace gptoss::vk

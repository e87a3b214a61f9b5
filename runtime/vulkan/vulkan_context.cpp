#include "runtime/vulkan/vulkan_context.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <utility>

#include "shaders/shader_registry.h"

namespace gptoss::vk {

void check(VkResult result, const char* what) {
  if (result != VK_SUCCESS) throw std::runtime_error(std::string("Vulkan: ") + what + " failed (VkResult " + std::to_string(result) + ")");
}

namespace {

// VK_KHR_cooperative_matrix, which Debian 12's Vulkan headers (1.3.239) do not have yet: its name,
// structure types and the layout of VkCooperativeMatrixPropertiesKHR, whose component types and
// scope take the NV extension's values.
constexpr const char* kKhrCooperativeMatrix = "VK_KHR_cooperative_matrix";
constexpr auto kKhrCooperativeMatrixFeatures = static_cast<VkStructureType>(1000506000);
constexpr auto kKhrCooperativeMatrixProperties = static_cast<VkStructureType>(1000506001);
struct KhrCooperativeMatrixProperties {
  VkStructureType sType = kKhrCooperativeMatrixProperties;
  void* pNext = nullptr;
  uint32_t MSize = 0, NSize = 0, KSize = 0;
  VkComponentTypeNV AType{}, BType{}, CType{}, ResultType{};
  VkBool32 saturatingAccumulation = VK_FALSE;
  VkScopeNV scope{};
};
using KhrListProperties = VkResult(VKAPI_PTR*)(VkPhysicalDevice, uint32_t*, KhrCooperativeMatrixProperties*);

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

bool has_extension(VkPhysicalDevice device, const char* name) {
  uint32_t count = 0;
  vkEnumerateDeviceExtensionProperties(device, nullptr, &count, nullptr);
  std::vector<VkExtensionProperties> all(count);
  vkEnumerateDeviceExtensionProperties(device, nullptr, &count, all.data());
  for (const auto& e : all)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

uint64_t maintenance3_limit(VkPhysicalDevice device) {
  VkPhysicalDeviceMaintenance3Properties m3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props.pNext = &m3;
  vkGetPhysicalDeviceProperties2(device, &props);
  return m3.maxMemoryAllocationSize;
}

std::string component_name(uint32_t type) {
  static constexpr const char* kNames[] = {"f16", "f32", "f64", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64"};
  return type < std::size(kNames) ? kNames[type] : "type " + std::to_string(type);
}

// Every subgroup-scope product the device lists in either extension (KHR's without saturation).
std::vector<CooperativeProduct> list_cooperative_products(VkInstance instance, VkPhysicalDevice device) {
  std::vector<CooperativeProduct> out;
  if (has_extension(device, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME)) {
    if (auto list = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
            vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"))) {
      uint32_t count = 0;
      list(device, &count, nullptr);
      std::vector<VkCooperativeMatrixPropertiesNV> props(count, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
      list(device, &count, props.data());
      for (const auto& p : props)
        if (p.scope == VK_SCOPE_SUBGROUP_NV)
          out.push_back({false, p.MSize, p.NSize, p.KSize, component_name(p.AType), component_name(p.BType),
                         component_name(p.CType), component_name(p.DType)});
    }
  }
  if (has_extension(device, kKhrCooperativeMatrix)) {
    if (auto list = reinterpret_cast<KhrListProperties>(
            vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"))) {
      uint32_t count = 0;
      std::vector<KhrCooperativeMatrixProperties> props;
      if (list(device, &count, nullptr) == VK_SUCCESS) props.resize(count);
      if (!props.empty() && list(device, &count, props.data()) != VK_SUCCESS) props.clear();
      for (const auto& p : props)
        if (p.scope == VK_SCOPE_SUBGROUP_NV && !p.saturatingAccumulation)
          out.push_back({true, p.MSize, p.NSize, p.KSize, component_name(p.AType), component_name(p.BType),
                         component_name(p.CType), component_name(p.ResultType)});
    }
  }
  return out;
}

DeviceInfo describe(VkInstance instance, VkPhysicalDevice device, uint32_t index) {
  // VK_KHR_shader_integer_dot_product's property and feature ride in the queries below where the
  // device has the extension (a query may chain only the structures of extensions it has).
  const bool has_integer_dot = has_extension(device, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceShaderIntegerDotProductPropertiesKHR dot_props{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES_KHR};
  subgroup.pNext = &driver;
  if (has_integer_dot) driver.pNext = &dot_props;
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
  info.max_allocation_bytes = maintenance3_limit(device);
  info.max_shared_memory = props2.properties.limits.maxComputeSharedMemorySize;
  info.subgroup_arithmetic = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                             (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) &&
                             (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT);
  info.subgroup_shuffle = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                          (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT);
  {
    VkPhysicalDeviceVulkan11Features v11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    VkPhysicalDeviceVulkan12Features v12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceShaderIntegerDotProductFeaturesKHR dot{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES_KHR};
    v11.pNext = &v12;
    if (has_integer_dot) v12.pNext = &dot;
    VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    features.pNext = &v11;
    vkGetPhysicalDeviceFeatures2(device, &features);
    info.buffer_device_address = v12.bufferDeviceAddress;
    info.float16 = v12.shaderFloat16 && v11.storageBuffer16BitAccess;
    info.float64 = features.features.shaderFloat64;
    info.int8 = v12.shaderInt8;
    info.integer_dot_product = dot.shaderIntegerDotProduct;
    info.integer_dot_product_accelerated =
        info.integer_dot_product && dot_props.integerDotProduct4x8BitPackedSignedAccelerated;
  }
  if (has_extension(device, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME)) {
    VkPhysicalDeviceShaderSMBuiltinsPropertiesNV sm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
    VkPhysicalDeviceProperties2 with_sm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    with_sm.pNext = &sm;
    vkGetPhysicalDeviceProperties2(device, &with_sm);
    info.multiprocessors = sm.shaderSMCount;
  }
  if (info.float16) {
    // The engine's kernels take the NV form's f16 shape; their KHR form is built for 16x16x16.
    const auto listed = list_cooperative_products(instance, device);
    info.cooperative_matrix = fp16_product_shape(listed, false);
    const auto khr = fp16_product_shape(listed, true);
    info.cooperative_matrix_khr = khr && khr->m == 16 && khr->n == 16 && khr->k == 16;
  }
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

std::optional<CooperativeMatrixShape> fp16_product_shape(std::span<const CooperativeProduct> listed, bool khr) {
  std::optional<CooperativeMatrixShape> found;
  for (const auto& p : listed) {
    if (p.khr != khr || p.a != "f16" || p.b != "f16" || p.c != "f32" || p.result != "f32") continue;
    const CooperativeMatrixShape shape{p.m, p.n, p.k};
    if (shape.m == 16 && shape.n == 16 && shape.k == 16) return shape;
    if (!found) found = shape;
  }
  return found;
}

std::vector<CooperativeProduct> Context::cooperative_products() const {
  return list_cooperative_products(instance_, physical_);
}

std::string cooperative_matrix_forms(const DeviceInfo& info) {
  const bool nv = info.cooperative_matrix.has_value(), khr = info.cooperative_matrix_khr;
  return nv && khr ? "nv, khr" : nv ? "nv" : khr ? "khr" : "none";
}

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
  for (uint32_t i = 0; i < devices.size(); ++i) infos.push_back(describe(instance.handle, devices[i], i));
  return infos;
}

std::unique_ptr<Context> Context::create(std::optional<uint32_t> device_index, ContextOptions options) {
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
  ctx->info_ = describe(ctx->instance_, ctx->physical_, *chosen);
  const DeviceInfo& info = ctx->info_;
  if (!info.buffer_device_address)
    throw std::runtime_error("Vulkan: " + info.name + " lacks bufferDeviceAddress, which the engine's kernels need");
  if (!info.subgroup_arithmetic)
    throw std::runtime_error("Vulkan: " + info.name + " lacks subgroup arithmetic in compute shaders, which the engine's kernels need");
  ctx->coopmat_disabled_ = !options.cooperative_matrix;
  vkGetPhysicalDeviceMemoryProperties(ctx->physical_, &ctx->memory_);

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = ctx->queue_family_;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  VkPhysicalDeviceVulkan11Features v11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features v12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coopmat{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.pNext = &v11;
  v11.pNext = &v12;
  v12.bufferDeviceAddress = VK_TRUE;
  std::vector<const char*> extensions;
  features.features.shaderFloat64 = info.float64 ? VK_TRUE : VK_FALSE;
  if (info.float16) {
    v12.shaderFloat16 = VK_TRUE;
    v11.storageBuffer16BitAccess = VK_TRUE;
  }
  v12.shaderInt8 = info.int8 ? VK_TRUE : VK_FALSE;
  void** chain_end = &v12.pNext;
  if (info.cooperative_matrix) {
    coopmat.cooperativeMatrix = VK_TRUE;
    *chain_end = &coopmat;
    chain_end = &coopmat.pNext;
    extensions.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  }
  // VK_KHR_cooperative_matrix's feature structure is the NV one's layout under its own type (the
  // Vulkan headers of Debian 12 predate the extension).
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coopmat_khr{kKhrCooperativeMatrixFeatures};
  if (info.cooperative_matrix_khr && !ctx->coopmat_disabled_) {
    coopmat_khr.cooperativeMatrix = VK_TRUE;
    *chain_end = &coopmat_khr;
    chain_end = &coopmat_khr.pNext;
    extensions.push_back(kKhrCooperativeMatrix);
  }
  VkPhysicalDeviceShaderIntegerDotProductFeaturesKHR integer_dot{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES_KHR};
  if (info.integer_dot_product) {
    integer_dot.shaderIntegerDotProduct = VK_TRUE;
    *chain_end = &integer_dot;
    chain_end = &integer_dot.pNext;
    extensions.push_back(VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
  }
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executable{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  if (options.pipeline_statistics &&
      has_extension(ctx->physical_, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME)) {
    executable.pipelineExecutableInfo = VK_TRUE;
    *chain_end = &executable;
    extensions.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
    ctx->pipeline_statistics_ = true;
  }
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.pNext = &features;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  dci.ppEnabledExtensionNames = extensions.data();
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

void Context::submit(const VkSubmitInfo& info, VkFence fence) const {
  std::lock_guard lock(queue_mutex_);
  check(vkQueueSubmit(queue_, 1, &info, fence), "vkQueueSubmit");
}

void Context::wait_idle() const noexcept {
  std::lock_guard lock(queue_mutex_);
  vkQueueWaitIdle(queue_);
}

void Context::run_once(const std::function<void(VkCommandBuffer)>& record) const {
  std::lock_guard pool_lock(pool_mutex_);
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
  submit(si, fence);
  check(vkWaitForFences(device_, 1, &fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
  vkDestroyFence(device_, fence, nullptr);
  vkFreeCommandBuffers(device_, pool_, 1, &cb);
}

void Context::dispatch_once(const Pipeline& pipeline, const void* push, uint32_t push_bytes, uint32_t gx, uint32_t gy,
                            uint32_t gz) const {
  run_once([&](VkCommandBuffer cb) {
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.handle());
    if (push_bytes) vkCmdPushConstants(cb, pipeline.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes, push);
    vkCmdDispatch(cb, gx, gy, gz);
  });
}

Buffer::Buffer(const Context& ctx, uint64_t size, bool host_visible) : ctx_(ctx), size_(size) {
  const uint64_t limit = ctx.info().max_allocation_bytes;
  if (limit && size > limit)
    throw std::runtime_error("Vulkan: a buffer of " + std::to_string(size) + " bytes exceeds " + ctx.info().name +
                             "'s largest allocation (maxMemoryAllocationSize " + std::to_string(limit) + " bytes)");
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = size;
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
              VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT | VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check(vkCreateBuffer(ctx.device(), &bci, nullptr, &buffer_), "vkCreateBuffer");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(ctx.device(), buffer_, &req);
  VkMemoryAllocateFlagsInfo flags{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO};
  flags.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
  VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  mai.pNext = &flags;
  mai.allocationSize = req.size;
  // Host-visible buffers are read back by the host: cached memory when there is one.
  if (host_visible) {
    const VkMemoryPropertyFlags wanted = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    try {
      mai.memoryTypeIndex = ctx.memory_type(req.memoryTypeBits, wanted | VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
    } catch (const std::runtime_error&) {
      mai.memoryTypeIndex = ctx.memory_type(req.memoryTypeBits, wanted);
    }
  } else {
    mai.memoryTypeIndex = ctx.memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  }
  const VkResult allocated = vkAllocateMemory(ctx.device(), &mai, nullptr, &memory_);
  if (allocated == VK_ERROR_OUT_OF_DEVICE_MEMORY || allocated == VK_ERROR_OUT_OF_HOST_MEMORY) {
    vkDestroyBuffer(ctx.device(), buffer_, nullptr);
    throw std::runtime_error("Vulkan: out of " + std::string(host_visible ? "host-visible" : "device") +
                             " memory allocating " + std::to_string(size) + " bytes on " + ctx.info().name + " (" +
                             std::to_string(ctx.allocated_bytes()) + " bytes already held)");
  }
  check(allocated, "vkAllocateMemory");
  allocated_ = req.size;
  ctx.allocated_ += allocated_;
  check(vkBindBufferMemory(ctx.device(), buffer_, memory_, 0), "vkBindBufferMemory");
  VkBufferDeviceAddressInfo address{VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO};
  address.buffer = buffer_;
  address_ = vkGetBufferDeviceAddress(ctx.device(), &address);
  if (host_visible) check(vkMapMemory(ctx.device(), memory_, 0, VK_WHOLE_SIZE, 0, &mapped_), "vkMapMemory");
}

Buffer::~Buffer() {
  ctx_.allocated_ -= allocated_;
  if (mapped_) vkUnmapMemory(ctx_.device(), memory_);
  vkDestroyBuffer(ctx_.device(), buffer_, nullptr);
  vkFreeMemory(ctx_.device(), memory_, nullptr);
}

namespace {
std::span<const uint32_t> shipped_shader(const std::string& name) {
  const auto& registry = shader_registry();
  auto it = registry.find(name);
  if (it == registry.end()) throw std::runtime_error("no embedded shader named " + name);
  return it->second;
}
}  // namespace

Pipeline::Pipeline(const Context& ctx, const std::string& shader_name, uint32_t push_bytes,
                   std::span<const uint32_t> specialization)
    : Pipeline(ctx, shader_name, shipped_shader(shader_name), push_bytes, specialization) {}

Pipeline::Pipeline(const Context& ctx, const std::string& name, std::span<const uint32_t> spirv, uint32_t push_bytes,
                   std::span<const uint32_t> specialization)
    : ctx_(ctx), name_(name), push_bytes_(push_bytes) {
  VkShaderModuleCreateInfo smci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  smci.codeSize = spirv.size() * sizeof(uint32_t);
  smci.pCode = spirv.data();
  check(vkCreateShaderModule(ctx.device(), &smci, nullptr, &module_), "vkCreateShaderModule");
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes};
  VkPipelineLayoutCreateInfo plci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  plci.pushConstantRangeCount = push_bytes ? 1 : 0;
  plci.pPushConstantRanges = &range;
  check(vkCreatePipelineLayout(ctx.device(), &plci, nullptr, &layout_), "vkCreatePipelineLayout");
  std::vector<VkSpecializationMapEntry> entries(specialization.size());
  for (uint32_t i = 0; i < entries.size(); ++i) entries[i] = {i, i * 4u, 4u};
  VkSpecializationInfo spec{static_cast<uint32_t>(entries.size()), entries.data(), specialization.size_bytes(),
                            specialization.data()};
  VkComputePipelineCreateInfo cpci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  cpci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  cpci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  cpci.stage.module = module_;
  cpci.stage.pName = "main";
  cpci.stage.pSpecializationInfo = specialization.empty() ? nullptr : &spec;
  cpci.layout = layout_;
  if (ctx.captures_pipeline_statistics()) cpci.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  const VkResult created = vkCreateComputePipelines(ctx.device(), VK_NULL_HANDLE, 1, &cpci, nullptr, &pipeline_);
  if (created != VK_SUCCESS)
    throw std::runtime_error("Vulkan: building the pipeline of kernel " + name + " failed (VkResult " +
                             std::to_string(created) + ")");
}

std::string Pipeline::statistics() const {
  if (!ctx_.captures_pipeline_statistics()) return {};
  auto statistics_of = reinterpret_cast<PFN_vkGetPipelineExecutableStatisticsKHR>(
      vkGetDeviceProcAddr(ctx_.device(), "vkGetPipelineExecutableStatisticsKHR"));
  if (!statistics_of) return {};
  VkPipelineExecutableInfoKHR executable{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
  executable.pipeline = pipeline_;
  executable.executableIndex = 0;
  uint32_t count = 0;
  if (statistics_of(ctx_.device(), &executable, &count, nullptr) != VK_SUCCESS) return {};
  std::vector<VkPipelineExecutableStatisticKHR> stats(count, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
  if (statistics_of(ctx_.device(), &executable, &count, stats.data()) != VK_SUCCESS) return {};
  std::string out;
  for (const auto& s : stats) {
    out += (out.empty() ? "" : ", ") + std::string(s.name) + "=";
    switch (s.format) {
      case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: out += s.value.b32 ? "true" : "false"; break;
      case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: out += std::to_string(s.value.i64); break;
      case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: out += std::to_string(s.value.u64); break;
      case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR: out += std::to_string(s.value.f64); break;
      default: out += "?"; break;
    }
  }
  return out;
}

Pipeline::~Pipeline() {
  vkDestroyPipeline(ctx_.device(), pipeline_, nullptr);
  vkDestroyPipelineLayout(ctx_.device(), layout_, nullptr);
  vkDestroyShaderModule(ctx_.device(), module_, nullptr);
}

}  // namespace gptoss::vk

#pragma once
// The Vulkan device the runtime computes on: instance, one compute queue, buffers, and compute
// pipelines built from the embedded SPIR-V. Works on any Vulkan 1.2 implementation, NVIDIA's
// driver and Mesa's lavapipe (CPU) alike.
#include <vulkan/vulkan.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace gptoss::vk {

struct DeviceInfo {
  uint32_t index = 0;  // in the instance's list of physical devices (--device N)
  std::string name;
  std::string driver;
  uint32_t vendor_id = 0;
  VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  uint64_t device_local_bytes = 0;
  uint32_t subgroup_size = 0;
  uint64_t max_storage_buffer_range = 0;  // largest range one storage-buffer binding may cover
  bool compute_timestamps = false;        // the compute queue can write timestamps
  double timestamp_period_ns = 0;         // nanoseconds per timestamp tick
  bool has_compute = false;               // has a compute queue (the runtime can use it)
};
const char* device_type_name(VkPhysicalDeviceType type);

class Context;

// A storage buffer; host-visible ones can be mapped for uploads and readbacks.
class Buffer {
 public:
  Buffer(const Context& ctx, uint64_t size, bool host_visible);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  VkBuffer handle() const { return buffer_; }
  uint64_t size() const { return size_; }
  void* mapped() const { return mapped_; }  // null for device-local buffers

 private:
  const Context& ctx_;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  uint64_t size_ = 0;
  uint64_t allocated_ = 0;  // the allocation's size (>= size_)
  void* mapped_ = nullptr;
};

// A compute pipeline over `bindings` storage buffers plus a push-constant block.
class Pipeline {
 public:
  Pipeline(const Context& ctx, const std::string& shader_name, uint32_t bindings, uint32_t push_bytes);
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;
  VkPipeline handle() const { return pipeline_; }
  VkPipelineLayout layout() const { return layout_; }
  VkDescriptorSetLayout set_layout() const { return set_layout_; }
  uint32_t bindings() const { return bindings_; }
  const std::string& name() const { return name_; }

 private:
  const Context& ctx_;
  std::string name_;
  VkShaderModule module_ = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
  uint32_t bindings_;
};

class Context {
 public:
  // Every physical device the Vulkan loader offers, in its order (the indices --device takes).
  static std::vector<DeviceInfo> list_devices();
  // Device `device_index`, or, without one, a discrete GPU when there is one, else the first
  // device with a compute queue. Throws std::runtime_error with the reason when none is usable.
  static std::unique_ptr<Context> create(std::optional<uint32_t> device_index = std::nullopt);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const DeviceInfo& info() const { return info_; }
  VkDevice device() const { return device_; }
  VkPhysicalDevice physical_device() const { return physical_; }
  VkQueue queue() const { return queue_; }
  VkCommandPool command_pool() const { return pool_; }
  uint32_t memory_type(uint32_t type_bits, VkMemoryPropertyFlags flags) const;
  // Bytes of device memory the live Buffers of this context hold.
  uint64_t allocated_bytes() const { return allocated_.load(); }

  // Records with `record`, submits once and waits (set-up work and tests).
  void run_once(const std::function<void(VkCommandBuffer)>& record) const;
  // Binds buffers to a fresh descriptor set of `pipeline` and dispatches; convenience for tests.
  void dispatch_once(const Pipeline& pipeline, std::span<const Buffer* const> buffers, const void* push,
                     uint32_t push_bytes, uint32_t groups_x, uint32_t groups_y = 1, uint32_t groups_z = 1) const;

 private:
  Context() = default;
  VkInstance instance_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkPhysicalDeviceMemoryProperties memory_{};
  DeviceInfo info_;
  mutable std::atomic<uint64_t> allocated_{0};
  friend class Buffer;
};

void check(VkResult result, const char* what);

}  // namespace gptoss::vk

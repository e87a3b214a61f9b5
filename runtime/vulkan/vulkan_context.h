#pragma once
// The Vulkan device the runtime computes on: instance, one compute queue, buffers and compute
// pipelines built from embedded SPIR-V. Works on any Vulkan 1.2 implementation with buffer device
// addresses and subgroup arithmetic: NVIDIA's driver and Mesa's lavapipe (CPU) alike.
//
// Kernels reach every buffer through its device address (GL_EXT_buffer_reference), passed in the
// push constants (shaders/kernel_abi.h): no descriptor sets, and no per-binding range limit
// (maxStorageBufferRange, 128 MiB on lavapipe), so any tensor that fits one allocation can be
// read by any kernel.
#include <vulkan/vulkan.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace gptoss::vk {

// A matrix shape the device's cooperative-matrix units multiply (VK_NV_cooperative_matrix).
struct CooperativeMatrixShape {
  uint32_t m = 0, n = 0, k = 0;
};

struct DeviceInfo {
  uint32_t index = 0;  // in the instance's list of physical devices (--device N)
  std::string name;
  std::string driver;
  uint32_t vendor_id = 0;
  VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  uint64_t device_local_bytes = 0;
  uint32_t subgroup_size = 0;
  uint64_t max_storage_buffer_range = 0;  // largest range one storage-buffer binding may cover
  uint64_t max_allocation_bytes = 0;      // largest single allocation (maxMemoryAllocationSize)
  uint32_t max_shared_memory = 0;         // bytes of shared memory per workgroup
  bool compute_timestamps = false;        // the compute queue can write timestamps
  double timestamp_period_ns = 0;         // nanoseconds per timestamp tick
  bool has_compute = false;               // has a compute queue (the runtime can use it)
  bool buffer_device_address = false;     // required by the engine
  bool subgroup_arithmetic = false;       // required by the engine (compute stage)
  bool subgroup_shuffle = false;          // compute stage; decode attention's two lanes per key use it
  bool float16 = false;                   // shaderFloat16 + 16-bit storage
  bool float64 = false;                   // shaderFloat64: the router sums in double (router.glsl)
  bool int8 = false;                      // shaderInt8 (enabled where present: measuring kernels' 8-bit matrices)
  uint32_t multiprocessors = 0;           // streaming multiprocessors (VK_NV_shader_sm_builtins); 0: not told
  // VK_KHR_shader_integer_dot_product's shaderIntegerDotProduct (the Q8_0 decode products use it),
  // and whether the device says its packed signed 4x8-bit form is accelerated (dp4a).
  bool integer_dot_product = false, integer_dot_product_accelerated = false;
  // fp16 x fp16 -> fp32 cooperative matrices in subgroup scope, when VK_NV_cooperative_matrix
  // lists them; the engine's prefill then multiplies on them.
  std::optional<CooperativeMatrixShape> cooperative_matrix;
  // VK_KHR_cooperative_matrix lists the 16 x 16 x 16 f16 -> f32 product in subgroup scope (enabled
  // beside the NV form; VulkanTuning::coop_form picks the kernels' form).
  bool cooperative_matrix_khr = false;
};
const char* device_type_name(VkPhysicalDeviceType type);
// One product a cooperative-matrix extension lists (subgroup scope): M x K times K x N plus M x N,
// component types by name ("f16", "f32", "s8", "s32", "u8", ... or "type N").
struct CooperativeProduct {
  bool khr = false;  // VK_KHR_cooperative_matrix's list, else VK_NV_cooperative_matrix's
  uint32_t m = 0, n = 0, k = 0;
  std::string a, b, c, result;
  bool operator==(const CooperativeProduct&) const = default;
};
// The f16 x f16 + f32 -> f32 shape that one extension's list holds: 16x16x16 where listed, else the
// first such (DeviceInfo::cooperative_matrix from the NV list; the KHR form needs 16x16x16).
std::optional<CooperativeMatrixShape> fp16_product_shape(std::span<const CooperativeProduct> listed, bool khr);
// The cooperative-matrix forms a device lists the engine's products in: "nv, khr", "nv", "khr" or
// "none" (gptoss-run --list-devices).
std::string cooperative_matrix_forms(const DeviceInfo& info);

class Context;

// A buffer with a device address; host-visible ones are mapped for uploads and readbacks.
class Buffer {
 public:
  Buffer(const Context& ctx, uint64_t size, bool host_visible);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  VkBuffer handle() const { return buffer_; }
  uint64_t size() const { return size_; }
  uint64_t address() const { return address_; }
  void* mapped() const { return mapped_; }  // null for device-local buffers

 private:
  const Context& ctx_;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  uint64_t size_ = 0;
  uint64_t allocated_ = 0;  // the allocation's size (>= size_)
  uint64_t address_ = 0;
  void* mapped_ = nullptr;
};

// A compute pipeline: one SPIR-V module, a push-constant block of `push_bytes`, and the values of
// its specialization constants 0, 1, ... (`specialization`, 32-bit each).
class Pipeline {
 public:
  Pipeline(const Context& ctx, const std::string& name, std::span<const uint32_t> spirv, uint32_t push_bytes,
           std::span<const uint32_t> specialization = {});
  // The shipped shader of that name (shaders/*.comp).
  Pipeline(const Context& ctx, const std::string& shader_name, uint32_t push_bytes,
           std::span<const uint32_t> specialization = {});
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;
  VkPipeline handle() const { return pipeline_; }
  VkPipelineLayout layout() const { return layout_; }
  uint32_t push_bytes() const { return push_bytes_; }
  const std::string& name() const { return name_; }
  // The driver's statistics of the compiled kernel (registers, spills, shared memory...) as
  // "name=value" pairs, when the context captures them (ContextOptions::pipeline_statistics and
  // VK_KHR_pipeline_executable_properties); empty otherwise.
  std::string statistics() const;

 private:
  const Context& ctx_;
  std::string name_;
  uint32_t push_bytes_;
  VkShaderModule module_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
};

// Without `cooperative_matrix` the cooperative-matrix kernels are off (the portable ones run:
// VulkanTuning::cooperative_matrix); `pipeline_statistics` captures the driver's statistics of
// every pipeline where the device can (VulkanTuning::pipeline_statistics).
struct ContextOptions {
  bool cooperative_matrix = true;
  bool pipeline_statistics = false;
};

class Context {
 public:
  // Every physical device the Vulkan loader offers, in its order (the indices --device takes).
  static std::vector<DeviceInfo> list_devices();
  // Device `device_index`, or, without one, a discrete GPU when there is one, else the first
  // device with a compute queue. Throws std::runtime_error with the reason when none is usable
  // (no compute queue, no buffer device addresses, no subgroup arithmetic).
  static std::unique_ptr<Context> create(std::optional<uint32_t> device_index = std::nullopt,
                                         ContextOptions options = {});
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const DeviceInfo& info() const { return info_; }
  VkDevice device() const { return device_; }
  VkPhysicalDevice physical_device() const { return physical_; }
  uint32_t queue_family() const { return queue_family_; }
  // The one queue, shared by every engine made on this context (runtime::SharedDevices): submits
  // go through submit(), which holds the queue's lock (Vulkan's external synchronization), so
  // engines on threads of their own may submit at any time; the GPU runs their work in the order
  // it was submitted. Each engine records into a command pool of its own.
  void submit(const VkSubmitInfo& info, VkFence fence) const;
  // Waits until the queue has run everything submitted to it (for destructors: a lost device has
  // nothing left to wait for, so it does not throw).
  void wait_idle() const noexcept;
  uint32_t memory_type(uint32_t type_bits, VkMemoryPropertyFlags flags) const;
  // Bytes of device memory the live Buffers of this context hold.
  uint64_t allocated_bytes() const { return allocated_.load(); }
  // The device has cooperative matrices and Options::cooperative_matrix left them on.
  bool use_cooperative_matrix() const { return info_.cooperative_matrix.has_value() && !coopmat_disabled_; }
  bool captures_pipeline_statistics() const { return pipeline_statistics_; }
  // Every subgroup-scope product the device lists in either extension (vulkan_kernel_bench's mma
  // section); empty where it has neither.
  std::vector<CooperativeProduct> cooperative_products() const;

  // Records with `record` (from this context's own command pool, under its lock), submits once and
  // waits (set-up work and tests).
  void run_once(const std::function<void(VkCommandBuffer)>& record) const;
  // Pushes `push` and dispatches `pipeline` once; convenience for tests.
  void dispatch_once(const Pipeline& pipeline, const void* push, uint32_t push_bytes, uint32_t groups_x,
                     uint32_t groups_y = 1, uint32_t groups_z = 1) const;

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
  bool coopmat_disabled_ = false;
  bool pipeline_statistics_ = false;
  mutable std::atomic<uint64_t> allocated_{0};
  mutable std::mutex queue_mutex_, pool_mutex_;
  friend class Buffer;
};

void check(VkResult result, const char* what);

}  // namespace gptoss::vk

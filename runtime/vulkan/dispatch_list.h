#pragma once
// A fixed sequence of compute dispatches and buffer copies, with their descriptor sets allocated
// once, that can be recorded into command buffers with a full memory barrier between steps. The
// engine builds its per-token work as one of these and records it once.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "runtime/vulkan/vulkan_context.h"

namespace gptoss::vk {

class DispatchList {
 public:
  explicit DispatchList(const Context& ctx) : ctx_(ctx) {}
  ~DispatchList();
  DispatchList(const DispatchList&) = delete;
  DispatchList& operator=(const DispatchList&) = delete;

  // `buffers` are bound (whole) to bindings 0, 1, ... of the pipeline.
  template <class Push>
  void dispatch(const Pipeline& pipeline, std::initializer_list<const Buffer*> buffers, const Push& push,
                uint32_t groups_x, uint32_t groups_y = 1, uint32_t groups_z = 1) {
    add_dispatch(pipeline, buffers, &push, sizeof(Push), groups_x, groups_y, groups_z);
  }
  void copy(const Buffer& source, uint64_t source_offset, const Buffer& target, uint64_t target_offset,
            uint64_t bytes);
  // Records every step; a barrier precedes each step after the first and follows the last one
  // (making the results visible to later steps, transfers and the host). With a query pool, a
  // timestamp goes to query `first_query` before the first step and to `first_query + 1 + i`
  // after step i (size() + 1 queries), for KernelProfiler.
  void record(VkCommandBuffer cb, VkQueryPool timestamps = VK_NULL_HANDLE, uint32_t first_query = 0) const;
  size_t size() const { return steps_.size(); }
  // What each step runs: the shader's name, or "copy".
  std::vector<std::string> labels() const;

 private:
  struct Step {
    const Pipeline* pipeline = nullptr;  // null: a copy
    VkDescriptorSet set = VK_NULL_HANDLE;
    std::vector<uint8_t> push;
    uint32_t groups[3] = {1, 1, 1};
    VkBuffer copy_source = VK_NULL_HANDLE, copy_target = VK_NULL_HANDLE;
    VkBufferCopy region{};
  };
  void add_dispatch(const Pipeline& pipeline, std::initializer_list<const Buffer*> buffers, const void* push,
                    uint32_t push_bytes, uint32_t gx, uint32_t gy, uint32_t gz);
  VkDescriptorSet allocate_set(const Pipeline& pipeline);

  const Context& ctx_;
  std::vector<VkDescriptorPool> pools_;
  uint32_t sets_left_in_pool_ = 0;
  std::vector<Step> steps_;
};

}  // namespace gptoss::vk

#pragma once
// A fixed sequence of compute dispatches and buffer copies that is recorded into command buffers
// with a memory barrier between steps. Kernels take every argument, buffer addresses included, as
// push constants (shaders/kernel_abi.h), so a step is a pipeline, its argument bytes and its grid:
// nothing to allocate per step. The engine builds each forward shape as one of these, records it
// once and submits it again and again.
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/vulkan/vulkan_context.h"

namespace gptoss::vk {

class DispatchList {
 public:
  DispatchList() = default;
  DispatchList(const DispatchList&) = delete;
  DispatchList& operator=(const DispatchList&) = delete;
  DispatchList(DispatchList&&) = default;
  DispatchList& operator=(DispatchList&&) = default;

  template <class Args>
  void dispatch(const Pipeline& pipeline, const Args& args, uint32_t groups_x, uint32_t groups_y = 1,
                uint32_t groups_z = 1) {
    add_dispatch(pipeline, &args, sizeof(Args), {groups_x, groups_y, groups_z}, nullptr, 0);
  }
  // The grid is read from `indirect` at `offset` (three uints) when the step runs.
  template <class Args>
  void dispatch_indirect(const Pipeline& pipeline, const Args& args, const Buffer& indirect, uint64_t offset) {
    add_dispatch(pipeline, &args, sizeof(Args), {0, 0, 0}, &indirect, offset);
  }
  void copy(const Buffer& source, uint64_t source_offset, const Buffer& target, uint64_t target_offset,
            uint64_t bytes);
  void fill(const Buffer& target, uint64_t offset, uint64_t bytes, uint32_t value);
  // Appends every step of `other` (its pipelines must outlive this list).
  void append(const DispatchList& other);
  // Names what the next steps compute ("qkv", "unembedding"): their labels become "kernel/tag",
  // so a profile tells apart the dispatches of one kernel. An empty tag ends it.
  void tag(std::string name) { tag_ = std::move(name); }

  // Records every step; a barrier precedes each step and follows the last one (making results
  // visible to later steps, transfers and the host). With a query pool, a timestamp goes to
  // query `first_query` before the first step and to `first_query + 1 + i` after step i
  // (size() + 1 queries), for KernelProfiler.
  void record(VkCommandBuffer cb, VkQueryPool timestamps = VK_NULL_HANDLE, uint32_t first_query = 0) const;
  size_t size() const { return steps_.size(); }
  // What each step runs: the kernel's name, "copy" or "fill".
  std::vector<std::string> labels() const;

 private:
  enum class Kind { Dispatch, Copy, Fill };
  struct Step {
    Kind kind = Kind::Dispatch;
    const Pipeline* pipeline = nullptr;
    std::vector<uint8_t> push;
    uint32_t groups[3] = {1, 1, 1};
    VkBuffer indirect = VK_NULL_HANDLE;
    uint64_t indirect_offset = 0;
    VkBuffer source = VK_NULL_HANDLE, target = VK_NULL_HANDLE;
    VkBufferCopy region{};
    uint32_t fill_value = 0;
    std::string tag;
  };
  struct Grid {
    uint32_t x, y, z;
  };
  void add_dispatch(const Pipeline& pipeline, const void* push, uint32_t push_bytes, Grid grid,
                    const Buffer* indirect, uint64_t offset);

  std::vector<Step> steps_;
  std::string tag_;
};

}  // namespace gptoss::vk

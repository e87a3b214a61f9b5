#pragma once
// GPU time per kernel, from timestamps written after every step of the recorded command buffers.
// Enabled by GPTOSS_VK_PROFILE=1 in the environment (gptoss-run --engine vulkan then prints the
// table on stderr at exit); off, it costs nothing. The steps are separated by full barriers, so
// each step's time is its own execution plus the barrier drain before it.
#include <map>
#include <string>
#include <vector>

#include "runtime/vulkan/vulkan_context.h"

namespace gptoss::vk {

class KernelProfiler {
 public:
  // Null when GPTOSS_VK_PROFILE is unset or the queue cannot write timestamps.
  static std::unique_ptr<KernelProfiler> from_environment(const Context& ctx, uint32_t queries);
  KernelProfiler(const Context& ctx, uint32_t queries);
  ~KernelProfiler();
  KernelProfiler(const KernelProfiler&) = delete;
  KernelProfiler& operator=(const KernelProfiler&) = delete;

  VkQueryPool pool() const { return pool_; }
  // Records the reset of every query (at the start of a command buffer, before any timestamp).
  void record_reset(VkCommandBuffer cb) const;
  // After the submit completed: adds the time between queries first + i and first + i + 1 to
  // labels[i], for every label.
  void collect(const std::vector<std::string>& labels, uint32_t first_query);
  // Markdown table: kernel, dispatches, total ms, mean µs, share; sorted by total.
  std::string report() const;

 private:
  struct Totals {
    uint64_t count = 0;
    double nanoseconds = 0;
  };
  const Context& ctx_;
  VkQueryPool pool_ = VK_NULL_HANDLE;
  uint32_t queries_;
  std::map<std::string, Totals> totals_;
};

}  // namespace gptoss::vk

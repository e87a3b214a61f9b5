#pragma once
// GPU time per kernel, from timestamps written after every step of the recorded command buffers
// (VulkanTuning::Profile::Steps; the tools' --profile prints the table the engine's diagnostics()
// give); off, it costs nothing. The steps are separated by barriers, so each step's time is its own
// execution plus the barrier drain before it. Profile::Submits times each command buffer as a
// whole instead (two timestamps per submit, so the per-step timestamps' own cost, several percent
// of decode, is not in it): the GPU's time per token, which against the wall time per token says
// how long the GPU waits on the host between submits.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/engine.h"
#include "runtime/vulkan/dispatch_list.h"
#include "runtime/vulkan/vulkan_context.h"

namespace gptoss::vk {

class KernelProfiler {
 public:
  enum class Scope { Steps, Submits };
  // Null for Profile::Off; throws std::runtime_error when the device's compute queue cannot write
  // timestamps.
  static std::unique_ptr<KernelProfiler> create(const Context& ctx, uint32_t queries, runtime::VulkanTuning::Profile profile);
  KernelProfiler(const Context& ctx, uint32_t queries, Scope scope = Scope::Steps);
  ~KernelProfiler();
  KernelProfiler(const KernelProfiler&) = delete;
  KernelProfiler& operator=(const KernelProfiler&) = delete;

  Scope scope() const { return scope_; }
  // Records `list` into cb with the reset and the timestamps of this profiler's scope; returns the
  // labels collect() takes after the submit: `phase` + each step's label, or `phase` + "submit".
  std::vector<std::string> record(VkCommandBuffer cb, const DispatchList& list, const std::string& phase) const;
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
  // Records the reset of every query (at the start of a command buffer, before any timestamp).
  void record_reset(VkCommandBuffer cb) const;
  const Context& ctx_;
  VkQueryPool pool_ = VK_NULL_HANDLE;
  uint32_t queries_;
  Scope scope_;
  std::map<std::string, Totals> totals_;
};

}  // namespace gptoss::vk

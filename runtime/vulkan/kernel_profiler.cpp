#include "runtime/vulkan/kernel_profiler.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace gptoss::vk {

std::unique_ptr<KernelProfiler> KernelProfiler::create(const Context& ctx, uint32_t queries,
                                                       runtime::VulkanTuning::Profile profile) {
  using Profile = runtime::VulkanTuning::Profile;
  if (profile == Profile::Off) return nullptr;
  if (!ctx.info().compute_timestamps)
    throw std::runtime_error("profiling kernels: " + ctx.info().name + " cannot write timestamps on its compute queue");
  return std::make_unique<KernelProfiler>(ctx, queries, profile == Profile::Submits ? Scope::Submits : Scope::Steps);
}

KernelProfiler::KernelProfiler(const Context& ctx, uint32_t queries, Scope scope)
    : ctx_(ctx), queries_(queries), scope_(scope) {
  VkQueryPoolCreateInfo info{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  info.queryType = VK_QUERY_TYPE_TIMESTAMP;
  info.queryCount = queries;
  check(vkCreateQueryPool(ctx.device(), &info, nullptr, &pool_), "vkCreateQueryPool");
}

KernelProfiler::~KernelProfiler() { vkDestroyQueryPool(ctx_.device(), pool_, nullptr); }

void KernelProfiler::record_reset(VkCommandBuffer cb) const { vkCmdResetQueryPool(cb, pool_, 0, queries_); }

std::vector<std::string> KernelProfiler::record(VkCommandBuffer cb, const DispatchList& list,
                                                const std::string& phase) const {
  const size_t needed = scope_ == Scope::Steps ? list.size() + 1 : 2;
  if (needed > queries_)
    throw std::logic_error("KernelProfiler: " + std::to_string(needed) + " timestamps needed, " + std::to_string(queries_) +
                           " held");
  record_reset(cb);
  std::vector<std::string> labels;
  if (scope_ == Scope::Steps) {
    list.record(cb, pool_, 0);
    for (const auto& label : list.labels()) labels.push_back(phase + label);
  } else {
    vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool_, 0);
    list.record(cb);
    vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool_, 1);
    labels.push_back(phase + "submit");
  }
  return labels;
}

void KernelProfiler::collect(const std::vector<std::string>& labels, uint32_t first_query) {
  std::vector<uint64_t> ticks(labels.size() + 1);
  check(vkGetQueryPoolResults(ctx_.device(), pool_, first_query, static_cast<uint32_t>(ticks.size()),
                              ticks.size() * sizeof(uint64_t), ticks.data(), sizeof(uint64_t),
                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
        "vkGetQueryPoolResults");
  for (size_t i = 0; i < labels.size(); ++i) {
    auto& t = totals_[labels[i]];
    ++t.count;
    t.nanoseconds += static_cast<double>(ticks[i + 1] - ticks[i]) * ctx_.info().timestamp_period_ns;
  }
}

std::string KernelProfiler::report() const {
  std::vector<std::pair<std::string, Totals>> rows(totals_.begin(), totals_.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.nanoseconds > b.second.nanoseconds; });
  double all = 0;
  for (const auto& [name, t] : rows) all += t.nanoseconds;
  std::string out = "| kernel | dispatches | total ms | mean us | share |\n|---|---|---|---|---|\n";
  char line[256];
  for (const auto& [name, t] : rows) {
    std::snprintf(line, sizeof line, "| %s | %llu | %.3f | %.2f | %.1f%% |\n", name.c_str(),
                  static_cast<unsigned long long>(t.count), t.nanoseconds / 1e6,
                  t.count ? t.nanoseconds / 1e3 / static_cast<double>(t.count) : 0.0,
                  all > 0 ? 100.0 * t.nanoseconds / all : 0.0);
    out += line;
  }
  std::snprintf(line, sizeof line, "| all | | %.3f | | |\n", all / 1e6);
  return out + line;
}

}  // namespace gptoss::vk

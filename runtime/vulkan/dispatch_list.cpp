#include "runtime/vulkan/dispatch_list.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace gptoss::vk {

void DispatchList::add_dispatch(const Pipeline& pipeline, const void* push, uint32_t push_bytes, Grid grid,
                                const Buffer* indirect, uint64_t offset) {
  if (push_bytes != pipeline.push_bytes())
    throw std::logic_error("kernel " + pipeline.name() + " takes " + std::to_string(pipeline.push_bytes()) +
                           " bytes of arguments, not " + std::to_string(push_bytes));
  if (!indirect && (grid.x == 0 || grid.y == 0 || grid.z == 0))
    throw std::logic_error("kernel " + pipeline.name() + " dispatched over an empty grid");
  Step step;
  step.pipeline = &pipeline;
  const auto* bytes = static_cast<const uint8_t*>(push);
  step.push.assign(bytes, bytes + push_bytes);
  step.groups[0] = grid.x;
  step.groups[1] = grid.y;
  step.groups[2] = grid.z;
  if (indirect) {
    step.indirect = indirect->handle();
    step.indirect_offset = offset;
  }
  step.tag = tag_;
  steps_.push_back(std::move(step));
}

void DispatchList::copy(const Buffer& source, uint64_t source_offset, const Buffer& target, uint64_t target_offset,
                        uint64_t bytes) {
  Step step;
  step.kind = Kind::Copy;
  step.source = source.handle();
  step.target = target.handle();
  step.region = {source_offset, target_offset, bytes};
  step.tag = tag_;
  steps_.push_back(std::move(step));
}

void DispatchList::fill(const Buffer& target, uint64_t offset, uint64_t bytes, uint32_t value) {
  Step step;
  step.kind = Kind::Fill;
  step.target = target.handle();
  step.region = {0, offset, bytes};
  step.fill_value = value;
  steps_.push_back(std::move(step));
}

void DispatchList::append(const DispatchList& other) { steps_.insert(steps_.end(), other.steps_.begin(), other.steps_.end()); }

std::vector<std::string> DispatchList::labels() const {
  std::vector<std::string> labels;
  labels.reserve(steps_.size());
  for (const Step& step : steps_) {
    std::string label = step.kind == Kind::Dispatch ? step.pipeline->name() : step.kind == Kind::Copy ? "copy" : "fill";
    labels.push_back(step.tag.empty() ? label : label + "/" + step.tag);
  }
  return labels;
}

namespace {

// What a step reads and writes, for the barrier in front of it. The barrier waits for every
// earlier compute or transfer write (the source side costs nothing extra) but names as its
// destination only what the step itself does: a barrier whose destination includes the indirect
// command read or transfers makes NVIDIA's driver drain and flush more than a compute-to-compute
// barrier, and a decode step runs ~150 of them per token.
struct StepAccess {
  VkPipelineStageFlags stages;
  VkAccessFlags access;
};

}  // namespace

void DispatchList::record(VkCommandBuffer cb, VkQueryPool timestamps, uint32_t first_query) const {
  const VkPipelineStageFlags all_stages =
      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT;
  const VkAccessFlags all_access = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                                   VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_INDIRECT_COMMAND_READ_BIT;
  auto needs = [&](const Step& step) -> StepAccess {
    switch (step.kind) {
      case Kind::Dispatch:
        if (step.indirect)
          return {VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT,
                  VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_INDIRECT_COMMAND_READ_BIT};
        return {VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
      case Kind::Copy:
        return {VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT};
      case Kind::Fill: return {VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT};
    }
    return {all_stages, all_access};
  };
  const VkPipelineStageFlags writers = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  auto barrier_before = [&](VkPipelineStageFlags source_stages, VkAccessFlags source_access, const StepAccess& next) {
    VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    barrier.srcAccessMask = source_access;
    barrier.dstAccessMask = next.access;
    vkCmdPipelineBarrier(cb, source_stages, next.stages, 0, 1, &barrier, 0, nullptr, 0, nullptr);
  };
  // The host wrote the step and token buffers before the submit (the submit makes host writes
  // visible; the barrier states it), and the previous submit must be done with the scratch: the
  // first barrier is the catch-all one.
  barrier_before(VK_PIPELINE_STAGE_HOST_BIT | all_stages,
                 VK_ACCESS_HOST_WRITE_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                 {all_stages, all_access});
  if (timestamps) vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, timestamps, first_query);
  const Pipeline* bound = nullptr;
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Step& step = steps_[i];
    if (i > 0) barrier_before(writers, VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT, needs(step));
    switch (step.kind) {
      case Kind::Dispatch:
        if (step.pipeline != bound) {
          vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, step.pipeline->handle());
          bound = step.pipeline;
        }
        vkCmdPushConstants(cb, step.pipeline->layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0,
                           static_cast<uint32_t>(step.push.size()), step.push.data());
        if (step.indirect) vkCmdDispatchIndirect(cb, step.indirect, step.indirect_offset);
        else vkCmdDispatch(cb, step.groups[0], step.groups[1], step.groups[2]);
        break;
      case Kind::Copy: vkCmdCopyBuffer(cb, step.source, step.target, 1, &step.region); break;
      case Kind::Fill: vkCmdFillBuffer(cb, step.target, step.region.dstOffset, step.region.size, step.fill_value); break;
    }
    if (timestamps)
      vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, timestamps, first_query + 1 + static_cast<uint32_t>(i));
  }
  VkMemoryBarrier to_host{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  to_host.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT;
  vkCmdPipelineBarrier(cb, all_stages, VK_PIPELINE_STAGE_HOST_BIT | all_stages, 0, 1, &to_host, 0, nullptr, 0, nullptr);
}

}  // namespace gptoss::vk

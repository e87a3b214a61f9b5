#include "runtime/vulkan/dispatch_list.h"

#include <stdexcept>

namespace gptoss::vk {
namespace {
constexpr uint32_t kSetsPerPool = 64;
constexpr uint32_t kMaxBindings = 8;
}  // namespace

DispatchList::~DispatchList() {
  for (VkDescriptorPool pool : pools_) vkDestroyDescriptorPool(ctx_.device(), pool, nullptr);
}

VkDescriptorSet DispatchList::allocate_set(const Pipeline& pipeline) {
  if (sets_left_in_pool_ == 0) {
    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kSetsPerPool * kMaxBindings};
    VkDescriptorPoolCreateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    info.maxSets = kSetsPerPool;
    info.poolSizeCount = 1;
    info.pPoolSizes = &size;
    VkDescriptorPool pool;
    check(vkCreateDescriptorPool(ctx_.device(), &info, nullptr, &pool), "vkCreateDescriptorPool");
    pools_.push_back(pool);
    sets_left_in_pool_ = kSetsPerPool;
  }
  VkDescriptorSetLayout layout = pipeline.set_layout();
  VkDescriptorSetAllocateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  info.descriptorPool = pools_.back();
  info.descriptorSetCount = 1;
  info.pSetLayouts = &layout;
  VkDescriptorSet set;
  check(vkAllocateDescriptorSets(ctx_.device(), &info, &set), "vkAllocateDescriptorSets");
  --sets_left_in_pool_;
  return set;
}

void DispatchList::add_dispatch(const Pipeline& pipeline, std::initializer_list<const Buffer*> buffers,
                                const void* push, uint32_t push_bytes, uint32_t gx, uint32_t gy, uint32_t gz) {
  if (buffers.size() != pipeline.bindings() || buffers.size() > kMaxBindings)
    throw std::logic_error("dispatch binds " + std::to_string(buffers.size()) + " buffers to a pipeline with " +
                           std::to_string(pipeline.bindings()));
  Step step;
  step.pipeline = &pipeline;
  step.set = allocate_set(pipeline);
  std::vector<VkDescriptorBufferInfo> infos;
  std::vector<VkWriteDescriptorSet> writes;
  infos.reserve(buffers.size());
  for (const Buffer* buffer : buffers) {
    infos.push_back({buffer->handle(), 0, VK_WHOLE_SIZE});
    VkWriteDescriptorSet write{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    write.dstSet = step.set;
    write.dstBinding = static_cast<uint32_t>(writes.size());
    write.descriptorCount = 1;
    write.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    write.pBufferInfo = &infos.back();
    writes.push_back(write);
  }
  vkUpdateDescriptorSets(ctx_.device(), static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);
  const auto* bytes = static_cast<const uint8_t*>(push);
  step.push.assign(bytes, bytes + push_bytes);
  step.groups[0] = gx;
  step.groups[1] = gy;
  step.groups[2] = gz;
  steps_.push_back(std::move(step));
}

void DispatchList::copy(const Buffer& source, uint64_t source_offset, const Buffer& target, uint64_t target_offset,
                        uint64_t bytes) {
  Step step;
  step.copy_source = source.handle();
  step.copy_target = target.handle();
  step.region = {source_offset, target_offset, bytes};
  steps_.push_back(std::move(step));
}

std::vector<std::string> DispatchList::labels() const {
  std::vector<std::string> labels;
  labels.reserve(steps_.size());
  for (const Step& step : steps_) labels.push_back(step.pipeline ? step.pipeline->name() : "copy");
  return labels;
}

void DispatchList::record(VkCommandBuffer cb, VkQueryPool timestamps, uint32_t first_query) const {
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                          VK_ACCESS_TRANSFER_WRITE_BIT;
  const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  // The host wrote the step buffer before submit (the submit makes host writes visible; the
  // barrier states it), and the previous token's work must be done with the scratch buffers.
  VkMemoryBarrier from_host = barrier;
  from_host.srcAccessMask |= VK_ACCESS_HOST_WRITE_BIT;
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_HOST_BIT | stages, stages, 0, 1, &from_host, 0, nullptr, 0, nullptr);
  if (timestamps) vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, timestamps, first_query);
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Step& step = steps_[i];
    if (i > 0) vkCmdPipelineBarrier(cb, stages, stages, 0, 1, &barrier, 0, nullptr, 0, nullptr);
    if (step.pipeline) {
      vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, step.pipeline->handle());
      vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, step.pipeline->layout(), 0, 1, &step.set, 0,
                              nullptr);
      if (!step.push.empty())
        vkCmdPushConstants(cb, step.pipeline->layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0,
                           static_cast<uint32_t>(step.push.size()), step.push.data());
      vkCmdDispatch(cb, step.groups[0], step.groups[1], step.groups[2]);
    } else {
      vkCmdCopyBuffer(cb, step.copy_source, step.copy_target, 1, &step.region);
    }
    if (timestamps)
      vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, timestamps, first_query + 1 + static_cast<uint32_t>(i));
  }
  VkMemoryBarrier to_host{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  to_host.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT;
  vkCmdPipelineBarrier(cb, stages, VK_PIPELINE_STAGE_HOST_BIT | stages, 0, 1, &to_host, 0, nullptr, 0, nullptr);
}

}  // namespace gptoss::vk

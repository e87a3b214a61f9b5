#include "runtime/vulkan/vulkan_engine.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "formats/core/checked_math.h"
#include "formats/core/error.h"
#include "runtime/vulkan/device_upload.h"
#include "runtime/vulkan/dispatch_list.h"
#include "runtime/vulkan/kernel_profiler.h"
#include "runtime/vulkan/vulkan_kernels.h"

namespace gptoss::vk {
namespace {

// A dense tensor on the device in its stored encoding.
struct DenseTensor {
  std::unique_ptr<Buffer> buffer;
  uint32_t encoding = 0;
};

// An MXFP4 expert tensor: blocks and scales as stored.
struct ExpertTensor {
  std::unique_ptr<Buffer> blocks, scales;
};

struct LayerTensors {
  DenseTensor attn_norm, q, q_bias, k, k_bias, v, v_bias, out, out_bias, sinks, mlp_norm, router, router_bias;
  ExpertTensor mlp1, mlp2;
  DenseTensor mlp1_bias, mlp2_bias;
  std::unique_ptr<Buffer> k_cache, v_cache;
};

uint64_t element_count(const CanonicalTensor& tensor) {
  const auto count = checked_product(tensor.spec.shape);
  if (!count) throw_format_error(tensor.origin, tensor.spec.name, std::nullopt, "element count overflows");
  return *count;
}

void check_bindable(const Context& ctx, const CanonicalTensor& tensor, uint64_t bytes) {
  const uint64_t limit = ctx.info().max_storage_buffer_range;
  if (limit && bytes > limit)
    throw std::runtime_error("Vulkan: " + tensor.spec.name + " (" + std::to_string(bytes) +
                             " bytes) exceeds the device's maxStorageBufferRange of " + std::to_string(limit) +
                             " bytes; binding a tensor in several ranges is not implemented yet");
}

void check_size(const CanonicalTensor& tensor, uint64_t expected) {
  if (tensor.source->size() != expected)
    throw_format_error(tensor.origin, tensor.spec.name, std::nullopt,
                       "holds " + std::to_string(tensor.source->size()) + " bytes, its shape and " +
                           std::string(dtype_name(tensor.dtype)) + " need " + std::to_string(expected));
}

DenseTensor upload_dense(const Context& ctx, DeviceUploader& uploader, const CanonicalTensor& tensor) {
  const auto encoding = dense_encoding(tensor.dtype);
  if (!encoding)
    throw_format_error(tensor.origin, tensor.spec.name, std::nullopt,
                       "dense tensor stored as " + std::string(dtype_name(tensor.dtype)) +
                           ", which the Vulkan kernels cannot decode (expected F32, F16, BF16 or Q8_0)");
  const uint64_t elements = element_count(tensor);
  const auto size = dtype_byte_size(tensor.dtype, elements);
  if (!size)
    throw_format_error(tensor.origin, tensor.spec.name, std::nullopt,
                       std::to_string(elements) + " elements are not a whole number of " +
                           std::string(dtype_name(tensor.dtype)) + " blocks");
  // The matvec kernel reads Q8_0 a block at a time within a row: rows must be whole blocks.
  if (tensor.dtype == DType::Q8_0 && tensor.spec.shape.back() % 32 != 0)
    throw_format_error(tensor.origin, tensor.spec.name, std::nullopt,
                       "Q8_0 rows of " + std::to_string(tensor.spec.shape.back()) +
                           " elements are not whole 32-element blocks");
  check_size(tensor, *size);
  check_bindable(ctx, tensor, *size);
  return {uploader.upload(*tensor.source), static_cast<uint32_t>(*encoding)};
}

ExpertTensor upload_experts(const Context& ctx, DeviceUploader& uploader, const CanonicalTensor& blocks,
                            const CanonicalTensor& scales) {
  if (blocks.dtype != DType::U8 || scales.dtype != DType::U8)
    throw_format_error(blocks.origin, blocks.spec.name, std::nullopt, "MXFP4 experts must be U8 blocks and scales");
  const uint64_t block_count = element_count(scales);
  if (element_count(blocks) != block_count * 16)
    throw_format_error(blocks.origin, blocks.spec.name, std::nullopt,
                       "blocks and scales disagree on the number of MXFP4 blocks");
  check_size(blocks, block_count * 16);
  check_size(scales, block_count);
  check_bindable(ctx, blocks, block_count * 16);
  return {uploader.upload(*blocks.source), uploader.upload(*scales.source)};
}

template <class T>
std::span<const uint8_t> as_bytes_of(const std::vector<T>& values) {
  return {reinterpret_cast<const uint8_t*>(values.data()), values.size() * sizeof(T)};
}

}  // namespace

struct VulkanEngine::Device {
  std::shared_ptr<Context> ctx;
  GptOssConfig config;
  uint32_t capacity = 0;
  std::unique_ptr<Kernels> kernels;
  DenseTensor embedding, final_norm, unembedding;
  std::vector<LayerTensors> layers;
  std::unique_ptr<Buffer> inv_freq;
  // Activations of the token being computed.
  std::unique_ptr<Buffer> x, normed, q, k_new, v_new, attn, router_logits, chosen, gate_weights, act, scores, logits;
  // Host-visible: the step (token, position) written before each submit, and the readbacks.
  std::unique_ptr<Buffer> step, stage_readback, logits_readback;
  std::unique_ptr<DispatchList> token_steps, logit_steps;
  VkCommandBuffer token_only = VK_NULL_HANDLE, token_and_logits = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  std::unique_ptr<KernelProfiler> profiler;  // GPTOSS_VK_PROFILE=1
  std::vector<std::string> token_labels, logit_labels;

  ~Device() {
    if (!ctx) return;
    vkDeviceWaitIdle(ctx->device());
    if (profiler) std::fprintf(stderr, "Vulkan kernel times on %s:\n%s", ctx->info().name.c_str(), profiler->report().c_str());
    profiler.reset();
    if (fence) vkDestroyFence(ctx->device(), fence, nullptr);
    VkCommandBuffer buffers[] = {token_only, token_and_logits};
    for (VkCommandBuffer cb : buffers)
      if (cb) vkFreeCommandBuffers(ctx->device(), ctx->command_pool(), 1, &cb);
  }

  std::unique_ptr<Buffer> scratch(uint64_t floats, bool host_visible = false) const {
    return std::make_unique<Buffer>(*ctx, std::max<uint64_t>(1, floats) * 4, host_visible);
  }
  void upload_weights(const CanonicalModel& model);
  void build_steps();
  VkCommandBuffer record(bool with_logits) const;
};

void VulkanEngine::Device::upload_weights(const CanonicalModel& model) {
  DeviceUploader uploader(*ctx);
  auto dense = [&](TensorRole role, int layer = -1) { return upload_dense(*ctx, uploader, model.get(role, layer)); };
  embedding = dense(TensorRole::Embedding);
  final_norm = dense(TensorRole::FinalNorm);
  unembedding = dense(TensorRole::Unembedding);
  layers.resize(config.num_layers);
  const uint64_t kv_floats = static_cast<uint64_t>(capacity) * config.kv_rows();
  for (uint32_t i = 0; i < config.num_layers; ++i) {
    const int l = static_cast<int>(i);
    auto& layer = layers[i];
    layer.attn_norm = dense(TensorRole::AttnNorm, l);
    layer.q = dense(TensorRole::AttnQ, l);
    layer.q_bias = dense(TensorRole::AttnQBias, l);
    layer.k = dense(TensorRole::AttnK, l);
    layer.k_bias = dense(TensorRole::AttnKBias, l);
    layer.v = dense(TensorRole::AttnV, l);
    layer.v_bias = dense(TensorRole::AttnVBias, l);
    layer.out = dense(TensorRole::AttnOut, l);
    layer.out_bias = dense(TensorRole::AttnOutBias, l);
    layer.sinks = dense(TensorRole::AttnSinks, l);
    layer.mlp_norm = dense(TensorRole::MlpNorm, l);
    layer.router = dense(TensorRole::RouterWeight, l);
    layer.router_bias = dense(TensorRole::RouterBias, l);
    layer.mlp1 = upload_experts(*ctx, uploader, model.get(TensorRole::Mlp1Blocks, l), model.get(TensorRole::Mlp1Scales, l));
    layer.mlp1_bias = dense(TensorRole::Mlp1Bias, l);
    layer.mlp2 = upload_experts(*ctx, uploader, model.get(TensorRole::Mlp2Blocks, l), model.get(TensorRole::Mlp2Scales, l));
    layer.mlp2_bias = dense(TensorRole::Mlp2Bias, l);
    layer.k_cache = scratch(kv_floats);
    layer.v_cache = scratch(kv_floats);
  }
  // YaRN tables exactly as the CPU engine computes them; the kernel takes cos/sin of pos * inv_freq.
  const auto yarn = compute_yarn(config);
  inv_freq = uploader.upload(as_bytes_of(yarn.inv_freq));
}

void VulkanEngine::Device::build_steps() {
  const auto& c = config;
  const Kernels& k = *kernels;
  const uint32_t hidden = c.hidden_size, q_rows = c.q_rows(), kv_rows = c.kv_rows();
  const uint32_t experts_per_token = c.experts_per_token, inter = c.intermediate_size;
  const float eps = static_cast<float>(c.rms_norm_eps);
  const uint32_t hidden_groups = (hidden + 63) / 64;
  token_steps = std::make_unique<DispatchList>(*ctx);
  logit_steps = std::make_unique<DispatchList>(*ctx);
  DispatchList& s = *token_steps;

  auto matvec = [&](const DenseTensor& weight, const DenseTensor* bias, const Buffer& in, const Buffer& out,
                    uint32_t rows, uint32_t cols, bool accumulate, DispatchList& list) {
    const MatvecPush push{rows, cols, weight.encoding, bias ? bias->encoding : 0u, bias ? 1u : 0u,
                          accumulate ? 1u : 0u, 1u, matvec_lanes(cols)};
    const auto groups = matvec_groups(rows, push.lanes);
    list.dispatch(k.matvec, {weight.buffer.get(), bias ? bias->buffer.get() : weight.buffer.get(), &in, &out}, push,
                  groups[0], groups[1]);
  };
  const uint64_t stage_bytes = uint64_t{hidden} * 4;

  s.dispatch(k.embed, {embedding.buffer.get(), step.get(), x.get()}, EmbedPush{embedding.encoding, hidden},
             hidden_groups);
  s.copy(*x, 0, *stage_readback, 0, stage_bytes);
  for (uint32_t l = 0; l < c.num_layers; ++l) {
    const auto& w = layers[l];
    s.dispatch(k.rmsnorm, {x.get(), w.attn_norm.buffer.get(), normed.get()}, RmsNormPush{hidden, w.attn_norm.encoding, eps}, 1);
    matvec(w.q, &w.q_bias, *normed, *q, q_rows, hidden, false, s);
    matvec(w.k, &w.k_bias, *normed, *k_new, kv_rows, hidden, false, s);
    matvec(w.v, &w.v_bias, *normed, *v_new, kv_rows, hidden, false, s);
    s.dispatch(k.rope_store,
               {q.get(), k_new.get(), v_new.get(), w.k_cache.get(), w.v_cache.get(), inv_freq.get(), step.get()},
               RopeStorePush{c.num_heads, c.num_kv_heads, c.head_dim, static_cast<float>(compute_yarn(c).concentration)},
               rope_store_groups(c.num_heads, c.num_kv_heads, c.head_dim));
    const AttentionPush attention{c.num_heads, c.num_kv_heads, c.head_dim, c.is_sliding(l) ? c.sliding_window : 0u,
                                  w.sinks.encoding, 1.0f / std::sqrt(static_cast<float>(c.head_dim)), capacity};
    s.dispatch(k.attention,
               {q.get(), w.k_cache.get(), w.v_cache.get(), w.sinks.buffer.get(), scores.get(), attn.get(), step.get()},
               attention, c.num_heads);
    matvec(w.out, &w.out_bias, *attn, *x, hidden, q_rows, true, s);
    s.dispatch(k.rmsnorm, {x.get(), w.mlp_norm.buffer.get(), normed.get()}, RmsNormPush{hidden, w.mlp_norm.encoding, eps}, 1);
    matvec(w.router, &w.router_bias, *normed, *router_logits, c.num_experts, hidden, false, s);
    s.dispatch(k.router_topk, {router_logits.get(), chosen.get(), gate_weights.get()},
               RouterTopkPush{c.num_experts, experts_per_token}, 1);
    s.dispatch(k.expert_mlp1,
               {w.mlp1.blocks.get(), w.mlp1.scales.get(), w.mlp1_bias.buffer.get(), normed.get(), chosen.get(), act.get()},
               ExpertMlp1Push{hidden, inter, w.mlp1_bias.encoding, static_cast<float>(c.swiglu_limit)},
               expert_mlp1_groups(inter, experts_per_token)[0], experts_per_token);
    s.dispatch(k.expert_mlp2,
               {w.mlp2.blocks.get(), w.mlp2.scales.get(), w.mlp2_bias.buffer.get(), act.get(), chosen.get(),
                gate_weights.get(), x.get()},
               ExpertMlp2Push{hidden, inter, w.mlp2_bias.encoding, experts_per_token}, expert_mlp2_groups(hidden));
    s.copy(*x, 0, *stage_readback, (uint64_t{l} + 1) * stage_bytes, stage_bytes);
  }
  s.dispatch(k.rmsnorm, {x.get(), final_norm.buffer.get(), normed.get()}, RmsNormPush{hidden, final_norm.encoding, eps}, 1);
  s.copy(*normed, 0, *stage_readback, (uint64_t{c.num_layers} + 1) * stage_bytes, stage_bytes);

  matvec(unembedding, nullptr, *normed, *logits, c.vocab_size, hidden, false, *logit_steps);
  logit_steps->copy(*logits, 0, *logits_readback, 0, uint64_t{c.vocab_size} * 4);
}

VkCommandBuffer VulkanEngine::Device::record(bool with_logits) const {
  VkCommandBufferAllocateInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  info.commandPool = ctx->command_pool();
  info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  info.commandBufferCount = 1;
  VkCommandBuffer cb;
  check(vkAllocateCommandBuffers(ctx->device(), &info, &cb), "vkAllocateCommandBuffers");
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  check(vkBeginCommandBuffer(cb, &begin), "vkBeginCommandBuffer");
  const VkQueryPool pool = profiler ? profiler->pool() : VK_NULL_HANDLE;
  if (profiler) profiler->record_reset(cb);
  token_steps->record(cb, pool, 0);
  if (with_logits) logit_steps->record(cb, pool, static_cast<uint32_t>(token_steps->size() + 1));
  check(vkEndCommandBuffer(cb), "vkEndCommandBuffer");
  return cb;
}

VulkanEngine::VulkanEngine(const CanonicalModel& model, const runtime::EngineOptions& options,
                           std::shared_ptr<Context> ctx)
    : device_(std::make_unique<Device>()) {
  Device& d = *device_;
  d.ctx = ctx ? std::move(ctx) : std::shared_ptr<Context>(Context::create(options.device_index));
  d.config = model.config;
  const auto& c = d.config;
  if (c.hidden_size % 32 || c.intermediate_size % 32 || c.head_dim % 2 || c.num_kv_heads == 0 ||
      c.num_heads % c.num_kv_heads || c.experts_per_token == 0 || c.experts_per_token > kMaxExpertsPerToken ||
      c.experts_per_token > c.num_experts || c.num_experts > kMaxExperts)
    throw std::runtime_error("Vulkan engine: unsupported shape (needs hidden and intermediate multiples of 32, even "
                             "head_dim, heads a multiple of kv_heads, 1..32 experts per token, at most 1024 experts)");
  d.capacity = static_cast<uint32_t>(std::min<uint64_t>({options.max_context, c.max_position_embeddings, UINT32_MAX}));
  d.kernels = std::make_unique<Kernels>(*d.ctx);
  d.upload_weights(model);
  d.x = d.scratch(c.hidden_size);
  d.normed = d.scratch(c.hidden_size);
  d.q = d.scratch(c.q_rows());
  d.k_new = d.scratch(c.kv_rows());
  d.v_new = d.scratch(c.kv_rows());
  d.attn = d.scratch(c.q_rows());
  d.router_logits = d.scratch(c.num_experts);
  d.chosen = d.scratch(c.experts_per_token);
  d.gate_weights = d.scratch(c.experts_per_token);
  d.act = d.scratch(uint64_t{c.experts_per_token} * c.intermediate_size);
  d.scores = d.scratch(uint64_t{c.num_heads} * d.capacity);
  d.logits = d.scratch(c.vocab_size);
  d.step = d.scratch(4, true);
  d.stage_readback = d.scratch((uint64_t{c.num_layers} + 2) * c.hidden_size, true);
  d.logits_readback = d.scratch(c.vocab_size, true);
  d.build_steps();
  d.profiler = KernelProfiler::from_environment(*d.ctx, static_cast<uint32_t>(d.token_steps->size() + d.logit_steps->size() + 2));
  d.token_labels = d.token_steps->labels();
  d.logit_labels = d.logit_steps->labels();
  d.token_only = d.record(false);
  d.token_and_logits = d.record(true);
  VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  check(vkCreateFence(d.ctx->device(), &fence_info, nullptr, &d.fence), "vkCreateFence");
}

VulkanEngine::~VulkanEngine() = default;

const GptOssConfig& VulkanEngine::config() const { return device_->config; }
const DeviceInfo& VulkanEngine::device() const { return device_->ctx->info(); }
std::string VulkanEngine::device_description() const { return device().name + " (" + device().driver + ")"; }
uint64_t VulkanEngine::capacity() const { return device_->capacity; }
uint64_t VulkanEngine::device_memory_bytes() const { return device_->ctx->allocated_bytes(); }

std::vector<float> VulkanEngine::run_forward(std::span<const uint32_t> tokens, runtime::LogitRows rows,
                                             const runtime::ActivationObserver& observer) {
  using runtime::LogitRows;
  using runtime::Stage;
  Device& d = *device_;
  const auto& c = d.config;
  const size_t count = tokens.size(), hidden = c.hidden_size, vocab = c.vocab_size;

  const size_t stage_count = c.num_layers + 2;  // embedding, every layer, final norm
  std::vector<std::vector<float>> stages(observer ? stage_count : 0, std::vector<float>(count * hidden));
  const size_t first_logit_row = rows == LogitRows::All ? 0 : count - 1;
  std::vector<float> logits(rows == LogitRows::None ? 0 : (count - first_logit_row) * vocab);
  auto* step = static_cast<uint32_t*>(d.step->mapped());
  const auto* stage_values = static_cast<const float*>(d.stage_readback->mapped());
  const auto* logit_values = static_cast<const float*>(d.logits_readback->mapped());
  const uint64_t start = position_;
  for (size_t t = 0; t < count; ++t) {
    step[0] = tokens[t];
    step[1] = static_cast<uint32_t>(start + t);
    const bool wants_logits = rows != LogitRows::None && t >= first_logit_row;
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = wants_logits ? &d.token_and_logits : &d.token_only;
    check(vkQueueSubmit(d.ctx->queue(), 1, &submit, d.fence), "vkQueueSubmit");
    check(vkWaitForFences(d.ctx->device(), 1, &d.fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    check(vkResetFences(d.ctx->device(), 1, &d.fence), "vkResetFences");
    if (d.profiler) {
      d.profiler->collect(d.token_labels, 0);
      if (wants_logits) d.profiler->collect(d.logit_labels, static_cast<uint32_t>(d.token_labels.size() + 1));
    }
    position_ = start + t + 1;
    for (size_t s = 0; s < stages.size(); ++s)
      std::memcpy(stages[s].data() + t * hidden, stage_values + s * hidden, hidden * sizeof(float));
    if (wants_logits) std::memcpy(logits.data() + (t - first_logit_row) * vocab, logit_values, vocab * sizeof(float));
  }
  if (observer) {
    auto view = [&](Stage stage, int layer, const std::vector<float>& values) {
      observer({stage, layer, start, count, hidden, values});
    };
    view(Stage::Embedding, -1, stages.front());
    for (uint32_t l = 0; l < c.num_layers; ++l) view(Stage::LayerOutput, static_cast<int>(l), stages[l + 1]);
    view(Stage::FinalNorm, -1, stages.back());
  }
  return logits;
}

}  // namespace gptoss::vk

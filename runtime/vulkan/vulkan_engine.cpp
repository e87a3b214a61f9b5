#include "runtime/vulkan/vulkan_engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>

#include "formats/core/error.h"
#include "formats/core/parallel_for.h"
#include "runtime/rope.h"
#include "runtime/vulkan/device_tensors.h"
#include "runtime/vulkan/device_upload.h"
#include "runtime/vulkan/dispatch_list.h"
#include "runtime/vulkan/kernel_profiler.h"
#include "runtime/vulkan/kernels.h"
#include "shaders/kernel_abi.h"

namespace gptoss::vk {
namespace {

using runtime::LogitRows;

// Q, K and V: stacked into one matrix when they share an encoding (one product over the
// concatenated rows), else three products into one output.
struct Projection {
  std::vector<DeviceMatrix> parts;
  uint32_t rows() const {
    uint32_t total = 0;
    for (const auto& p : parts) total += p.rows;
    return total;
  }
};

struct LayerWeights {
  std::unique_ptr<Buffer> attn_norm, qkv_bias, out_bias, sinks, mlp_norm, router_bias, mlp1_bias, mlp2_bias;
  Projection qkv;
  DeviceMatrix out, router;
  DeviceExperts mlp1, mlp2;
  std::unique_ptr<Buffer> k_cache, v_cache;
  uint32_t slots = 0;      // cache positions: the capacity, or a ring on sliding layers
};

// upload_weights uploads a group of tensors the kernels read as one at the group's last member
// in the canonical order of a layer.
constexpr size_t layer_position(TensorRole role) {
  for (size_t i = 0; i < kLayerRoles.size(); ++i)
    if (kLayerRoles[i] == role) return i;
  return kLayerRoles.size();
}
static_assert(layer_position(TensorRole::AttnVBias) > std::max({layer_position(TensorRole::AttnQ),
                                                                layer_position(TensorRole::AttnK),
                                                                layer_position(TensorRole::AttnV),
                                                                layer_position(TensorRole::AttnQBias),
                                                                layer_position(TensorRole::AttnKBias)}));
static_assert(layer_position(TensorRole::Mlp1Scales) > layer_position(TensorRole::Mlp1Blocks));
static_assert(layer_position(TensorRole::Mlp2Scales) > layer_position(TensorRole::Mlp2Blocks));

// Copies logits from the mapped readback into the caller's memory: pieces of 16 MiB on up to 8
// threads, since a range of a chunk is hundreds of MB at the real vocabulary (255 rows: 205 MB) and
// the device waits for the next submit meanwhile.
void copy_rows(std::span<float> target, const float* source) {
  constexpr size_t kPiece = size_t{4} << 20;  // floats
  const size_t pieces = (target.size() + kPiece - 1) / kPiece;
  parallel_for(pieces, std::min(8u, resolve_threads(0)), [&](size_t i) {
    const size_t begin = i * kPiece, size = std::min(kPiece, target.size() - begin);
    std::memcpy(target.data() + begin, source + begin, size * sizeof(float));
  });
}

uint64_t gib_tenths(uint64_t bytes) { return (bytes * 10 + (1ull << 29)) >> 30; }
std::string gib(uint64_t bytes) {
  const uint64_t t = gib_tenths(bytes);
  return std::to_string(t / 10) + "." + std::to_string(t % 10) + " GiB";
}

}  // namespace

struct VulkanEngine::Device {
  std::shared_ptr<Context> ctx;
  GptOssConfig config;
  uint32_t capacity = 0;
  uint32_t chunk = 0;  // tokens per submit
  runtime::KvCacheType kv_cache = runtime::KvCacheType::F32;
  uint32_t cache_value_bytes() const { return kv_cache == runtime::KvCacheType::F16 ? 2 : 4; }
  std::unique_ptr<Kernels> kernels;
  DeviceMatrix embedding, unembedding;
  std::unique_ptr<Buffer> final_norm, rope;
  std::vector<LayerWeights> layers;
  Kernels::AttentionShape attention{};
  float eps = 0;
  // Decode attention's shapes by reach (record_decode_attention): Short while a step's keys fit one
  // range on every layer (position + 1 <= attention_range_keys()), Long beyond. A decode step's
  // command buffer holds those of its position's reach.
  enum class AttentionReach { Short, Long };
  AttentionReach reach_at(uint64_t position) const {
    return position + 1 <= kernels->attention_range_keys() ? AttentionReach::Short : AttentionReach::Long;
  }
  // The host writes the next submit's tokens and step state to host-visible staging; the command
  // buffer's first step copies them to device memory, so kernels never read across the bus.
  // One staging buffer: the step state at 0, the tokens at kTokensOffset, copied in one step.
  static constexpr uint64_t kTokensOffset = 16;
  std::unique_ptr<Buffer> step_staging;
  // Scratch for a chunk of tokens.
  std::unique_ptr<Buffer> step, x, xn, qkv, attn, chosen, gate_weights, act, y;
  std::unique_ptr<Buffer> router_logits;  // decode: [experts], ranked by the expert kernels
  std::unique_ptr<Buffer> assign_token, row_of, tiles, dispatch, argmax;
  // Shared by the workgroups of one dispatch: partial results and arrival counters (kept zero).
  std::unique_ptr<Buffer> shared_partials, counters;
  // The cooperative GEMMs' inputs as split halves (hi, lo).
  std::unique_ptr<Buffer> halves_hi, halves_lo;
  // One row of logits on the device (a matrix-vector product's: the argmax reads it there), and,
  // grown on demand, the host-visible readback of the most rows one submit has asked for so far,
  // which a GEMM over a range of rows writes directly; and the observer's stage copies.
  std::unique_ptr<Buffer> logits, logits_readback, stages;
  uint32_t logits_rows = 0, stage_rows = 0;
  // The caller's logit memory (VulkanEngine::allocate_logit_memory): host-visible buffers the GEMM
  // over a submit's rows writes into instead of the readback, so that no host copy follows. Each is
  // held by its runtime::LogitMemory handles with the context, so it may outlive the engine.
  struct CallerLogits {
    std::shared_ptr<Context> ctx;  // destroyed after the buffer
    std::unique_ptr<Buffer> buffer;
  };
  std::vector<std::weak_ptr<CallerLogits>> caller_logits;
  // Where the GEMM may write `rows` (floats of a caller's logit memory still held): their device
  // address, or 0 where they lie outside every such buffer (the readback and a copy then).
  Address logits_target(std::span<const float> rows) const {
    const auto at = reinterpret_cast<uintptr_t>(rows.data()), bytes = rows.size() * sizeof(float);
    for (const auto& held : caller_logits) {
      const auto memory = held.lock();
      if (!memory) continue;
      const Buffer& b = *memory->buffer;
      const auto first = reinterpret_cast<uintptr_t>(b.mapped());
      if (at >= first && at - first <= b.size() && bytes <= b.size() - (at - first)) return b.address() + (at - first);
    }
    return 0;
  }
  runtime::VulkanTuning tuning;
  std::unique_ptr<KernelProfiler> profiler;  // tuning.profile

  struct Recorded {
    VkCommandBuffer cb = VK_NULL_HANDLE;
    std::vector<std::string> labels;
  };
  // One command buffer per submit shape (tokens, logit rows, observed, greedy, decode attention's
  // reach, packed sequences' length) and target of the rows' GEMM (0: the readback), recorded once.
  // The rows are None, Last or a range of the submit's tokens (All is the range of every token), or
  // of each packed sequence's, so a caller asking the same rows chunk after chunk (gptoss-eval)
  // records once; beyond kMaxRecorded shapes the recordings are dropped and made again as needed.
  static constexpr size_t kMaxRecorded = 64;
  std::map<std::tuple<uint32_t, LogitRows, bool, bool, AttentionReach, uint32_t, Address>, Recorded> recorded;
  VkFence fence = VK_NULL_HANDLE;
  // The recordings' pool: this engine's own, since the context (and its queue) may be shared with
  // other engines on other threads (runtime::SharedDevices).
  VkCommandPool pool = VK_NULL_HANDLE;

  ~Device() {
    if (!ctx) return;
    ctx->wait_idle();
    profiler.reset();
    if (fence) vkDestroyFence(ctx->device(), fence, nullptr);
    free_recorded();
    if (pool) vkDestroyCommandPool(ctx->device(), pool, nullptr);
  }
  void free_recorded() {
    for (auto& [key, r] : recorded) vkFreeCommandBuffers(ctx->device(), pool, 1, &r.cb);
    recorded.clear();
  }

  std::unique_ptr<Buffer> floats(uint64_t count, bool host_visible = false) const {
    return std::make_unique<Buffer>(*ctx, std::max<uint64_t>(16, count * 4), host_visible);
  }
  void check_memory(const CanonicalModel& model) const;
  void upload_weights(const CanonicalModel& model);
  void allocate_scratch();
  void ensure_logits(uint32_t rows);
  // Layer l's attention: its window (0 on full layers) and cache slots.
  Kernels::AttentionShape shape_of(uint32_t l) const {
    Kernels::AttentionShape shape = attention;
    shape.window = config.is_sliding(l) ? config.sliding_window : 0u;
    shape.slots = layers[l].slots;
    return shape;
  }
  void ensure_stages(uint32_t rows);
  // The observed residual stream's slots in `stages`, each [rows, hidden]: the embedding (0), every
  // layer's output, the final norm, every layer's attention output; the router choices follow them.
  static constexpr uint64_t kEmbeddingSlot = 0;
  uint64_t layer_slot(uint32_t l) const { return 1 + uint64_t{l}; }
  uint64_t final_norm_slot() const { return layer_slot(config.num_layers); }
  uint64_t attention_slot(uint32_t l) const { return final_norm_slot() + 1 + l; }
  uint64_t stage_slots() const { return attention_slot(config.num_layers); }
  // One submit of `count` tokens. rows: None, Last or Range (of these tokens; count > 0). greedy:
  // the last row's argmax on the device instead of its logits to the host.
  // reach: decode attention's shape (count 1; prefill chunks take Short).
  // sequence: 0, or the length of the independent sequences the submit packs (a prefill of whole
  // ones, never observed; rows None or a Range of each sequence's tokens, their logits one
  // sequence after the other). target: where a GEMM over a Range's rows writes them (a caller's
  // logit memory, logits_target), or 0: into the readback.
  static uint32_t sequences_in(uint32_t count, uint32_t sequence) { return sequence ? count / sequence : 1; }
  DispatchList build(uint32_t count, LogitRows rows, bool observed, bool greedy, AttentionReach reach,
                     uint32_t sequence, Address target) const;
  // Decode attention of layer l at positions of this reach (see the definition).
  void record_decode_attention(DispatchList& list, uint32_t l, const Kernels::Shared& shared,
                               AttentionReach reach) const;
  // The recording of a submit of `count` tokens at `position` (decode attention's reach follows it).
  const Recorded& get(uint32_t count, LogitRows rows, bool observed, uint64_t position, bool greedy = false,
                      uint32_t sequence = 0, Address target = 0);
  // Whether a submit of `count` tokens and these rows writes them through `target` (build's GEMM)
  // rather than into the readback.
  static bool writes_target(uint32_t count, LogitRows rows, Address target) {
    return target != 0 && count > 1 && rows.kind == LogitRows::Kind::Range;
  }
  void submit(const Recorded& r);
  void wait_for(VkFence done) const;
  // The tokens of the next submit, the position of the first, and the length of the sequences it
  // packs (0: one).
  void tokens_to_device(std::span<const uint32_t> ids, uint32_t position, uint32_t sequence = 0) {
    const abi::StepState state{position, static_cast<uint32_t>(ids.size()), sequence};
    auto* staging = static_cast<uint8_t*>(step_staging->mapped());
    std::memcpy(staging, &state, sizeof state);
    std::memcpy(staging + kTokensOffset, ids.data(), ids.size() * sizeof(uint32_t));
  }
};

void VulkanEngine::Device::check_memory(const CanonicalModel& model) const {
  const auto& c = config;
  uint64_t weights = 0;
  // What upload_weights makes of each tensor: vectors as F32, matrices and experts as stored.
  for_each_tensor(c.num_layers, [&](TensorRole role, int layer) {
    weights += device_bytes(model.get(role, layer), is_vector_role(role));
  });
  uint64_t cache = 0;
  for (uint32_t l = 0; l < c.num_layers; ++l) {
    const uint64_t slots = c.is_sliding(l) ? std::min<uint64_t>(capacity, uint64_t{c.sliding_window} + chunk) : capacity;
    cache += 2 * slots * c.kv_rows() * cache_value_bytes();
  }
  const uint64_t k = c.experts_per_token;
  const uint64_t scratch =
      4 * uint64_t{chunk} * (2 * c.hidden_size + c.q_rows() + 2 * c.kv_rows() + c.q_rows() +
                             k * (c.intermediate_size + c.hidden_size + 4)) +
      4 * uint64_t{c.vocab_size} * 2;
  const uint64_t needed = weights + cache + scratch;
  // What other engines on this context (runtime::SharedDevices) hold already is not available.
  const uint64_t device_local = ctx->info().device_local_bytes, held = ctx->allocated_bytes();
  const uint64_t available = device_local > held ? device_local - held : 0;
  if (device_local && needed > available)
    throw std::runtime_error("Vulkan: the model needs " + gib(needed) + " of device memory (weights " + gib(weights) +
                             ", KV cache for " + std::to_string(capacity) + " positions " + gib(cache) + ", scratch " +
                             gib(scratch) + ") and " + ctx->info().name + " has " + gib(available) +
                             (held ? " besides the " + gib(held) + " its other engines hold" : std::string()) +
                             "; nothing was uploaded");
}

void VulkanEngine::Device::upload_weights(const CanonicalModel& model) {
  DeviceUploader uploader(*ctx);
  const auto& c = config;
  auto matrix = [&](TensorRole role, int layer = -1) { return upload_matrix(*ctx, uploader, model.get(role, layer)); };
  auto vector = [&](TensorRole role, int layer = -1) { return upload_vector(*ctx, uploader, model.get(role, layer)); };
  embedding = matrix(TensorRole::Embedding);
  unembedding = matrix(TensorRole::Unembedding);
  final_norm = vector(TensorRole::FinalNorm);
  layers.resize(c.num_layers);
  for (uint32_t i = 0; i < c.num_layers; ++i) {
    auto& w = layers[i];
    // The layer's tensors in canonical order; a group the kernels read as one (Q/K/V stacked,
    // their biases, an MXFP4 blocks/scales pair) is uploaded at its last member.
    const CanonicalTensor* q = nullptr;
    const CanonicalTensor* k = nullptr;
    const CanonicalTensor* v = nullptr;
    const CanonicalTensor* q_bias = nullptr;
    const CanonicalTensor* k_bias = nullptr;
    const CanonicalTensor* mlp1_blocks = nullptr;
    const CanonicalTensor* mlp2_blocks = nullptr;
    for_each_layer_tensor(model, static_cast<int>(i), [&](TensorRole role, const CanonicalTensor& t) {
      switch (role) {
        case TensorRole::AttnNorm: w.attn_norm = upload_vector(*ctx, uploader, t); break;
        case TensorRole::AttnQ: q = &t; break;
        case TensorRole::AttnQBias: q_bias = &t; break;
        case TensorRole::AttnK: k = &t; break;
        case TensorRole::AttnKBias: k_bias = &t; break;
        case TensorRole::AttnV: v = &t; break;
        case TensorRole::AttnVBias: {
          const CanonicalTensor* projections[] = {q, k, v};
          if (q->dtype == k->dtype && q->dtype == v->dtype) {
            w.qkv.parts.push_back(upload_matrix(*ctx, uploader, projections));
          } else {
            for (const CanonicalTensor* part : projections) w.qkv.parts.push_back(upload_matrix(*ctx, uploader, *part));
          }
          const CanonicalTensor* biases[] = {q_bias, k_bias, &t};
          w.qkv_bias = upload_vector(*ctx, uploader, biases);
          break;
        }
        case TensorRole::AttnOut: w.out = upload_matrix(*ctx, uploader, t); break;
        case TensorRole::AttnOutBias: w.out_bias = upload_vector(*ctx, uploader, t); break;
        case TensorRole::AttnSinks: w.sinks = upload_vector(*ctx, uploader, t); break;
        case TensorRole::MlpNorm: w.mlp_norm = upload_vector(*ctx, uploader, t); break;
        case TensorRole::RouterWeight: w.router = upload_matrix(*ctx, uploader, t); break;
        case TensorRole::RouterBias: w.router_bias = upload_vector(*ctx, uploader, t); break;
        case TensorRole::Mlp1Blocks: mlp1_blocks = &t; break;
        case TensorRole::Mlp1Scales: w.mlp1 = upload_experts(*ctx, uploader, *mlp1_blocks, t); break;
        case TensorRole::Mlp1Bias: w.mlp1_bias = upload_vector(*ctx, uploader, t); break;
        case TensorRole::Mlp2Blocks: mlp2_blocks = &t; break;
        case TensorRole::Mlp2Scales: w.mlp2 = upload_experts(*ctx, uploader, *mlp2_blocks, t); break;
        case TensorRole::Mlp2Bias: w.mlp2_bias = upload_vector(*ctx, uploader, t); break;
        case TensorRole::Embedding:
        case TensorRole::Unembedding:
        case TensorRole::FinalNorm: break;  // not per-layer: uploaded above
      }
    });
    const bool sliding = c.is_sliding(i);
    w.slots = sliding ? static_cast<uint32_t>(std::min<uint64_t>(capacity, uint64_t{c.sliding_window} + chunk)) : capacity;
    const uint64_t cache_bytes = std::max<uint64_t>(16, uint64_t{w.slots} * c.kv_rows() * cache_value_bytes());
    w.k_cache = std::make_unique<Buffer>(*ctx, cache_bytes, false);
    w.v_cache = std::make_unique<Buffer>(*ctx, cache_bytes, false);
  }
  // The rotary table of every position the context holds, the CPU engine's f32 values (runtime/rope.h).
  const auto yarn = compute_yarn(c);
  const auto pairs = runtime::rope_pairs(capacity, yarn.inv_freq, static_cast<float>(yarn.concentration));
  rope = uploader.upload(std::span(reinterpret_cast<const uint8_t*>(pairs.data()), pairs.size() * 4));
  attention = {c.num_heads,
               c.num_kv_heads,
               c.head_dim,
               0,
               0,
               1.0f / std::sqrt(static_cast<float>(c.head_dim)),
               kv_cache == runtime::KvCacheType::F16 ? abi::ENC_F16 : abi::ENC_F32};
}

void VulkanEngine::Device::allocate_scratch() {
  const auto& c = config;
  const uint64_t n = chunk, k = c.experts_per_token;
  step_staging = std::make_unique<Buffer>(*ctx, kTokensOffset + std::max<uint64_t>(16, n * 4), true);
  step = std::make_unique<Buffer>(*ctx, kTokensOffset + std::max<uint64_t>(16, n * 4), false);
  x = floats(n * c.hidden_size);
  xn = floats(n * c.hidden_size);
  qkv = floats(n * (c.q_rows() + 2 * c.kv_rows()));
  attn = floats(n * c.q_rows());
  router_logits = floats(c.num_experts);
  // Partials of the kernels whose workgroups meet: mlp2's combine, argmax, decode attention's ranges.
  uint64_t shared_floats =
      std::max<uint64_t>(Kernels::expert_mlp2_partials(c.hidden_size, c.experts_per_token), 2 * ARGMAX_GROUPS);
  for (uint32_t l = 0; l < c.num_layers; ++l)
    shared_floats = std::max(shared_floats, kernels->decode_attention_partials(shape_of(l)));
  shared_partials = floats(shared_floats);
  // The largest GEMM input: tokens x hidden, x q_rows, or tokens * k x intermediate (in halves).
  const uint64_t halves = n * std::max({uint64_t{c.hidden_size}, uint64_t{c.q_rows()}, k * c.intermediate_size});
  halves_hi = std::make_unique<Buffer>(*ctx, std::max<uint64_t>(16, halves * 2), false);
  halves_lo = std::make_unique<Buffer>(*ctx, std::max<uint64_t>(16, halves * 2), false);
  counters = floats(Kernels::kCounters);
  ctx->run_once([&](VkCommandBuffer cb) { vkCmdFillBuffer(cb, counters->handle(), 0, VK_WHOLE_SIZE, 0); });
  chosen = floats(n * k);
  gate_weights = floats(n * k);
  act = floats(n * k * c.intermediate_size);
  y = floats(n * k * c.hidden_size);
  assign_token = floats(n * k);
  row_of = floats(n * k);
  tiles = floats(3 * uint64_t{Kernels::max_moe_tiles(static_cast<uint32_t>(n * k), c.num_experts)});
  dispatch = floats(8);
  argmax = std::make_unique<Buffer>(*ctx, 16, true);
  logits = floats(c.vocab_size);
  ensure_logits(1);
}

void VulkanEngine::Device::ensure_logits(uint32_t rows) {
  if (rows <= logits_rows) return;
  logits_readback.reset();
  logits_readback = floats(uint64_t{rows} * config.vocab_size, true);
  logits_rows = rows;
  free_recorded();  // recorded command buffers hold the old addresses
}

void VulkanEngine::Device::ensure_stages(uint32_t rows) {
  if (rows <= stage_rows) return;
  // The residual stream's stages (stage_slots()), then every layer's router choices (uints).
  stages = floats(stage_slots() * rows * config.hidden_size + uint64_t{config.num_layers} * rows * config.experts_per_token,
                  true);
  stage_rows = rows;
  free_recorded();
}

void VulkanEngine::Device::record_decode_attention(DispatchList& list, uint32_t l, const Kernels::Shared& shared,
                                                   AttentionReach reach) const {
  const Kernels::AttentionShape shape = shape_of(l);
  const LayerWeights& w = layers[l];
  const auto attend = [&](const Kernels::AttentionPart& part) {
    kernels->attention_decode(list, shape, qkv->address(), w.k_cache->address(), w.v_cache->address(),
                              rope->address(), step->address(), w.sinks->address(), attn->address(), shared, part);
  };
  if (kernels->attention_heads_fixed()) return attend({0, UINT32_MAX});  // one shape, to compare
  // A decode step's command buffer holds one shape per layer, by its position's reach. Short (the
  // keys fit one range): one query head per workgroup, eight times the workgroups of a KV head's,
  // each with an eighth of the work: the kernel's chain is latency-bound, not bandwidth-bound, so
  // more and shorter workgroups finish sooner. Long: on every layer workgroups of up to two query
  // heads, each reading its KV head's cache once for them, in as many ranges as fill the device
  // once (Kernels::attention_wave_splits); the sliding layers, their window full, take two heads
  // too (51b6520 and the measurements in its notes). The short shape still bounds its keys (past
  // them it returns), so it never computes at a position it was not made for.
  const uint32_t group = shape.heads / shape.kv_heads, short_keys = kernels->attention_range_keys();
  if (reach == AttentionReach::Short) return attend({1, short_keys});
  attend({Kernels::largest_divisor_within(group, abi::kDefaultAttentionHeads), UINT32_MAX});
}

DispatchList VulkanEngine::Device::build(uint32_t count, LogitRows rows, bool observed, bool greedy,
                                         AttentionReach reach, uint32_t sequence, Address target) const {
  const auto& c = config;
  auto& k = *kernels;
  DispatchList list;
  const uint64_t row_bytes = uint64_t{c.hidden_size} * 4;
  const uint64_t stage_bytes = uint64_t{count} * row_bytes;
  list.copy(*step_staging, 0, *step, 0, kTokensOffset + uint64_t{count} * 4);
  k.embed(list, embedding, step->address() + kTokensOffset, x->address(), count);
  if (observed) list.copy(*x, 0, *stages, kEmbeddingSlot * stage_bytes, stage_bytes);
  const uint32_t k_experts = c.experts_per_token;
  const Kernels::MoeTables tables{assign_token->address(), row_of->address(), tiles->address(), dispatch.get(),
                                  count * k_experts};
  const Kernels::Shared shared{shared_partials->address(), counters->address()};
  const Kernels::Halves halves{halves_hi->address(), halves_lo->address()};
  for (uint32_t l = 0; l < c.num_layers; ++l) {
    const LayerWeights& w = layers[l];
    const Kernels::AttentionShape shape = shape_of(l);
    if (count == 1) {
      list.tag("qkv");
      uint64_t row = 0;
      for (const auto& part : w.qkv.parts) {
        k.matvec(list, part, w.qkv_bias->address() + row * 4, x->address(), w.attn_norm->address(),
                 qkv->address() + row * 4, false, eps);
        row += part.rows;
      }
      list.tag(shape.window ? "sliding" : "full");
      record_decode_attention(list, l, shared, reach);
      list.tag("out");
      k.matvec(list, w.out, w.out_bias->address(), attn->address(), 0, x->address(), true, eps);
      list.tag("");
      if (observed) list.copy(*x, 0, *stages, attention_slot(l) * stage_bytes, stage_bytes);
      // The router writes logits; each workgroup of mlp1 ranks them, the first writing the choices
      // mlp2 reads.
      k.router(list, w.router, w.router_bias->address(), x->address(), w.mlp_norm->address(),
               {xn->address(), 0, 0, router_logits->address()}, k_experts, 1, eps);
      const Kernels::Choices ranked{chosen->address(), gate_weights->address(), router_logits->address(), c.num_experts};
      k.expert_mlp1(list, w.mlp1, w.mlp1_bias->address(), xn->address(), ranked, act->address(), k_experts,
                    static_cast<float>(c.swiglu_limit));
      k.expert_mlp2(list, w.mlp2, w.mlp2_bias->address(), act->address(), chosen->address(), gate_weights->address(),
                    x->address(), k_experts, shared);
    } else {
      const uint32_t qkv_rows = w.qkv.rows();
      k.rmsnorm(list, x->address(), w.attn_norm->address(), xn->address(), c.hidden_size, count, 0, eps);
      list.tag("qkv");
      uint64_t row = 0;
      for (const auto& part : w.qkv.parts) {
        k.gemm(list, part, w.qkv_bias->address() + row * 4, xn->address(), c.hidden_size, qkv->address() + row * 4,
               qkv_rows, count, false, halves);
        row += part.rows;
      }
      list.tag("");
      k.rope_store(list, shape, qkv->address(), w.k_cache->address(), w.v_cache->address(), rope->address(),
                   step->address(), count);
      list.tag(shape.window ? "sliding" : "full");
      k.attention_prefill(list, shape, qkv->address(), w.k_cache->address(), w.v_cache->address(), w.sinks->address(),
                          step->address(), attn->address(), count);
      list.tag("out");
      k.gemm(list, w.out, w.out_bias->address(), attn->address(), c.q_rows(), x->address(), c.hidden_size, count, true,
             halves);
      list.tag("");
      if (observed) list.copy(*x, 0, *stages, attention_slot(l) * stage_bytes, stage_bytes);
      k.router(list, w.router, w.router_bias->address(), x->address(), w.mlp_norm->address(),
               {xn->address(), chosen->address(), gate_weights->address(), 0}, k_experts, count, eps);
      k.moe_route(list, chosen->address(), tables, count, k_experts, w.mlp1, w.mlp2);
      list.tag("mlp1");
      k.expert_gemm(list, w.mlp1, w.mlp1_bias->address(), xn->address(), count, tables, act->address(), true,
                    static_cast<float>(c.swiglu_limit), halves);
      list.tag("mlp2");
      k.expert_gemm(list, w.mlp2, w.mlp2_bias->address(), act->address(), count * k_experts, tables, y->address(), false,
                    0.0f, halves);
      list.tag("");
      k.moe_combine(list, y->address(), tables, chosen->address(), gate_weights->address(), x->address(), c.hidden_size,
                    k_experts, count);
    }
    if (observed) {
      list.copy(*x, 0, *stages, layer_slot(l) * stage_bytes, stage_bytes);
      const uint64_t choice_bytes = uint64_t{count} * k_experts * 4;
      list.copy(*chosen, 0, *stages, stage_slots() * stage_bytes + l * choice_bytes, choice_bytes);
    }
  }
  const bool range = rows.kind == LogitRows::Kind::Range;
  // The final norm: every row when observed (the stage copy), else only the range's rows, into xn
  // from its start (per row the same kernel and arithmetic: the rows equal those of a full norm).
  uint64_t range_input = xn->address();
  if (observed) {
    k.rmsnorm(list, x->address(), final_norm->address(), xn->address(), c.hidden_size, count, 0, eps);
    list.copy(*xn, 0, *stages, final_norm_slot() * stage_bytes, stage_bytes);
    if (range) range_input += rows.first * row_bytes;
  } else if (range) {
    // Packed sequences: each one's range into xn after the previous one's, so that one GEMM makes
    // every sequence's logits.
    const uint32_t sequences = sequences_in(count, sequence);
    for (uint32_t s = 0; s < sequences; ++s)
      k.rmsnorm(list, x->address(), final_norm->address(), xn->address() + s * rows.count * row_bytes, c.hidden_size,
                static_cast<uint32_t>(rows.count), static_cast<uint32_t>(s * sequence + rows.first), eps);
    rows.count *= sequences;
  }
  const uint64_t vocab_bytes = uint64_t{c.vocab_size} * 4;
  list.tag("unembedding");
  if (rows == LogitRows::Last) {
    // The last row's final norm is fused into the unembedding product.
    k.matvec(list, unembedding, 0, x->address() + (count - 1) * row_bytes, final_norm->address(), logits->address(),
             false, eps);
    if (greedy) {
      list.tag("");
      k.argmax(list, logits->address(), argmax->address(), c.vocab_size, shared);
    } else {
      list.copy(*logits, 0, *logits_readback, 0, vocab_bytes);
    }
  } else if (range) {
    // A one-token submit takes the matrix-vector product (as decode always has), any other the GEMM
    // over the range's rows only: the GEMM computes each row from that row alone, so the rows are
    // those of a GEMM over every row. The GEMM writes its rows straight into host memory, its
    // stores crossing the bus while it computes, instead of to device memory and then through a
    // copy (docs/results.md has an evaluation both ways): into the caller's logit memory where the
    // rows go there (target), else into the readback.
    const auto n = static_cast<uint32_t>(rows.count);
    if (count == 1) {
      k.matvec(list, unembedding, 0, range_input, 0, logits->address(), false, eps);
      list.copy(*logits, 0, *logits_readback, 0, vocab_bytes);
    } else {
      k.gemm(list, unembedding, 0, range_input, c.hidden_size, target ? target : logits_readback->address(),
             c.vocab_size, n, false, halves);
    }
  }
  return list;
}

const VulkanEngine::Device::Recorded& VulkanEngine::Device::get(uint32_t count, LogitRows rows, bool observed,
                                                               uint64_t position, bool greedy, uint32_t sequence,
                                                               Address target) {
  if (!writes_target(count, rows, target)) target = 0;
  if (rows.kind == LogitRows::Kind::Range && !target)
    ensure_logits(static_cast<uint32_t>(rows.count * sequences_in(count, sequence)));
  if (observed) ensure_stages(count);
  const AttentionReach reach = count == 1 ? reach_at(position) : AttentionReach::Short;
  const auto key = std::make_tuple(count, rows, observed, greedy, reach, sequence, target);
  if (recorded.size() >= kMaxRecorded && !recorded.count(key)) free_recorded();
  auto& r = recorded[key];
  if (r.cb) return r;
  const DispatchList list = build(count, rows, observed, greedy, reach, sequence, target);
  if (!profiler) profiler = KernelProfiler::create(*ctx, 64 + 16 * config.num_layers, tuning.profile);
  VkCommandBufferAllocateInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  info.commandPool = pool;
  info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  info.commandBufferCount = 1;
  check(vkAllocateCommandBuffers(ctx->device(), &info, &r.cb), "vkAllocateCommandBuffers");
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  check(vkBeginCommandBuffer(r.cb, &begin), "vkBeginCommandBuffer");
  if (profiler) r.labels = profiler->record(r.cb, list, count == 1 ? "decode " : "prefill ");
  else list.record(r.cb);
  check(vkEndCommandBuffer(r.cb), "vkEndCommandBuffer");
  return r;
}

// Polls the fence for up to kSpin (20 ms) before sleeping in vkWaitForFences: a decode step takes a
// few milliseconds, and a sleeping wait wakes tens of microseconds after the GPU is done, which the
// next step's submit waits for (e435c95 measured the gain; CUDA's default synchronization spins
// too). Longer work (a prefill chunk) sleeps after that.
void VulkanEngine::Device::wait_for(VkFence done) const {
  constexpr auto kSpin = std::chrono::milliseconds(20);
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  VkResult status;
  while ((status = vkGetFenceStatus(ctx->device(), done)) == VK_NOT_READY)
    if (std::chrono::steady_clock::now() > deadline) break;
  if (status != VK_NOT_READY) return check(status, "vkGetFenceStatus");
  check(vkWaitForFences(ctx->device(), 1, &done, VK_TRUE, UINT64_MAX), "vkWaitForFences");
}

void VulkanEngine::Device::submit(const Recorded& r) {
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &r.cb;
  ctx->submit(submit, fence);
  wait_for(fence);
  check(vkResetFences(ctx->device(), 1, &fence), "vkResetFences");
  if (profiler) profiler->collect(r.labels, 0);
}

VulkanEngine::VulkanEngine(const CanonicalModel& model, const runtime::EngineOptions& options,
                           std::shared_ptr<Context> ctx)
    : device_(std::make_unique<Device>()) {
  Device& d = *device_;
  d.tuning = options.vulkan;
  d.ctx = ctx ? std::move(ctx)
              : std::shared_ptr<Context>(Context::create(
                    options.device_index, {options.vulkan.cooperative_matrix, options.vulkan.pipeline_statistics}));
  d.config = model.config;
  const auto& c = d.config;
  d.eps = static_cast<float>(c.rms_norm_eps);
  d.capacity = static_cast<uint32_t>(std::min<uint64_t>({options.max_context, c.max_position_embeddings, UINT32_MAX}));
  d.capacity = std::max<uint32_t>(d.capacity, 1);
  // Prefill in chunks of up to prefill_chunk tokens; shapes the prefill attention kernel does not
  // cover go through the decode kernels a token at a time.
  const bool batched = Kernels::prefill_attention_supports(c.num_heads, c.num_kv_heads, c.head_dim);
  d.chunk = batched ? std::clamp<uint32_t>(options.prefill_chunk, 1, d.capacity) : 1;
  d.kv_cache = options.kv_cache;
  d.kernels = std::make_unique<Kernels>(*d.ctx, options.vulkan);
  d.check_memory(model);
  d.upload_weights(model);
  d.allocate_scratch();
  VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  check(vkCreateFence(d.ctx->device(), &fence_info, nullptr, &d.fence), "vkCreateFence");
  VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool_info.queueFamilyIndex = d.ctx->queue_family();
  check(vkCreateCommandPool(d.ctx->device(), &pool_info, nullptr, &d.pool), "vkCreateCommandPool");
  // Record the decode steps (both reaches where the context holds them) and a full prefill chunk
  // now: their launchers check every kernel's limits before the first token, and neither a
  // prompt's first chunk nor the step past the short reach waits for pipelines.
  for (const uint64_t position : {uint64_t{0}, uint64_t{d.kernels->attention_range_keys()}}) {
    if (position >= d.capacity) break;
    d.get(1, LogitRows::Last, false, position);
    d.get(1, LogitRows::Last, false, position, true);
  }
  if (d.chunk > 1) d.get(d.chunk, LogitRows::Last, false, 0);
}

VulkanEngine::~VulkanEngine() = default;

const GptOssConfig& VulkanEngine::config() const { return device_->config; }
const DeviceInfo& VulkanEngine::device() const { return device_->ctx->info(); }
std::string VulkanEngine::device_description() const { return device().name + " (" + device().driver + ")"; }
uint64_t VulkanEngine::capacity() const { return device_->capacity; }
uint64_t VulkanEngine::device_memory_bytes() const { return device_->ctx->allocated_bytes(); }

std::string VulkanEngine::diagnostics() const {
  const Device& d = *device_;
  std::string out;
  if (d.profiler) out += "Vulkan kernel times on " + d.ctx->info().name + ":\n" + d.profiler->report();
  if (d.tuning.pipeline_statistics) {
    const std::string stats = d.kernels->pipeline_statistics();
    out += stats.empty() ? "pipeline statistics: " + d.ctx->info().name + " does not report them\n"
                         : "pipeline statistics:\n" + stats;
  }
  return out;
}

uint32_t VulkanEngine::run_forward_greedy(std::span<const uint32_t> tokens) {
  Device& d = *device_;
  // Every chunk but the last without logits; the last one's argmax stays on the device.
  if (tokens.size() > 1) run_forward(tokens.first(tokens.size() - 1), LogitRows::None, {}, {});
  const auto& recorded = d.get(1, LogitRows::Last, false, position_, true);
  d.tokens_to_device(tokens.last(1), static_cast<uint32_t>(position_));
  d.submit(recorded);
  ++position_;
  return static_cast<const uint32_t*>(d.argmax->mapped())[0];
}

std::span<const float> VulkanEngine::run_forward_last(std::span<const uint32_t> tokens) {
  run_forward(tokens, LogitRows::Last, {}, {});
  return {static_cast<const float*>(device_->logits_readback->mapped()), device_->config.vocab_size};
}

runtime::LogitMemory VulkanEngine::allocate_logit_memory(size_t floats) {
  Device& d = *device_;
  std::erase_if(d.caller_logits, [](const auto& held) { return held.expired(); });
  auto memory = std::make_shared<Device::CallerLogits>(Device::CallerLogits{d.ctx, d.floats(floats, true)});
  d.caller_logits.push_back(memory);
  return {{static_cast<float*>(memory->buffer->mapped()), floats}, memory};
}

// Whole sequences per submit, as many as a prefill chunk holds, at cache positions from 0 (each
// submit's sequences are all the cache holds); where a submit would hold one sequence, or the
// sequences' length does not suit the prefill attention's tiles, or the rows are Last (a fused
// final norm of its own), one sequence after the other as every engine does.
void VulkanEngine::run_forward_sequences(std::span<const uint32_t> tokens, uint32_t sequences, LogitRows rows,
                                         std::span<float> logits) {
  Device& d = *device_;
  const auto& c = d.config;
  const auto length = static_cast<uint32_t>(tokens.size() / sequences);
  const uint32_t per_submit = d.chunk / length;
  if (per_submit < 2 || sequences < 2 || rows == LogitRows::Last ||
      length % Kernels::prefill_sequence_multiple(c.num_heads, c.num_kv_heads) != 0)
    return Engine::run_forward_sequences(tokens, sequences, rows, logits);
  if (rows == LogitRows::All) rows = LogitRows::range(0, length);
  const size_t per_sequence = rows.row_count(length) * c.vocab_size;
  for (uint32_t s = 0; s < sequences; s += per_submit) {
    const uint32_t n = std::min(per_submit, sequences - s), count = n * length;
    const auto target_rows = logits.subspan(s * per_sequence, n * per_sequence);
    const Address target = d.logits_target(target_rows);
    const auto& recorded = d.get(count, rows, false, 0, false, length, target);
    d.tokens_to_device(tokens.subspan(uint64_t{s} * length, count), 0, length);
    d.submit(recorded);
    if (per_sequence && !Device::writes_target(count, rows, target))
      copy_rows(target_rows, static_cast<const float*>(d.logits_readback->mapped()));
  }
  reset();
}

void VulkanEngine::run_forward(std::span<const uint32_t> tokens, LogitRows rows, std::span<float> logits,
                               const runtime::ActivationObserver& observer) {
  using runtime::Stage;
  Device& d = *device_;
  const auto& c = d.config;
  const size_t count = tokens.size(), hidden = c.hidden_size, vocab = c.vocab_size;
  const size_t stage_count = d.stage_slots();
  const size_t k = c.experts_per_token;
  std::vector<std::vector<float>> stages(observer ? stage_count : 0, std::vector<float>(count * hidden));
  std::vector<std::vector<float>> choices(observer ? c.num_layers : 0, std::vector<float>(count * k));
  // The rows asked for, [row_begin, row_end) of the new tokens (Last: handled per submit below).
  const bool last = rows == LogitRows::Last;
  const size_t row_begin = rows.first_row(count), row_end = row_begin + rows.row_count(count);
  const uint64_t start = position_;
  for (size_t first = 0; first < count; first += d.chunk) {
    const auto n = static_cast<uint32_t>(std::min<size_t>(d.chunk, count - first));
    const bool last_chunk = first + n == count;
    // This submit's rows: Last on the last submit, else the part of the range inside it (as a range
    // of its own tokens), else none.
    LogitRows chunk_rows = LogitRows::None;
    const size_t from = std::max(row_begin, first), to = std::min(row_end, first + n);
    if (last) chunk_rows = last_chunk ? LogitRows::Last : LogitRows::None;
    else if (from < to) chunk_rows = LogitRows::range(from - first, to - from);
    // A range's rows in a caller's logit memory take the GEMM's stores there, and no copy below.
    const auto range_rows = chunk_rows.kind == LogitRows::Kind::Range
                                ? logits.subspan((from - row_begin) * vocab, (to - from) * vocab)
                                : std::span<float>{};
    const Address target = d.logits_target(range_rows);
    const auto& recorded = d.get(n, chunk_rows, static_cast<bool>(observer), position_, false, 0, target);
    d.tokens_to_device(tokens.subspan(first, n), static_cast<uint32_t>(position_));
    d.submit(recorded);
    position_ += n;
    const auto* stage_values = static_cast<const float*>(d.stages ? d.stages->mapped() : nullptr);
    for (size_t s = 0; s < stages.size(); ++s)
      std::memcpy(stages[s].data() + first * hidden, stage_values + s * n * hidden, n * hidden * sizeof(float));
    std::vector<uint32_t> chosen_ids(choices.empty() ? 0 : c.num_layers * n * k);
    if (!chosen_ids.empty())
      std::memcpy(chosen_ids.data(), stage_values + stage_count * n * hidden, chosen_ids.size() * sizeof(uint32_t));
    for (size_t l = 0; l < choices.size(); ++l)
      for (size_t i = 0; i < n * k; ++i) choices[l][first * k + i] = static_cast<float>(chosen_ids[l * n * k + i]);
    // The one host copy of the logits: from the mapped readback into the caller's rows; none for
    // run_forward_last, which passes no rows and hands the readback itself to its caller.
    const auto* logit_values = static_cast<const float*>(d.logits_readback->mapped());
    if (chunk_rows == LogitRows::Last && !logits.empty())
      std::memcpy(logits.data(), logit_values, vocab * sizeof(float));
    if (chunk_rows.kind == LogitRows::Kind::Range && !Device::writes_target(n, chunk_rows, target))
      copy_rows(range_rows, logit_values);
  }
  if (observer) {
    auto view = [&](Stage stage, int layer, const std::vector<float>& values) {
      observer({stage, layer, start, count, hidden, values});
    };
    view(Stage::Embedding, -1, stages[Device::kEmbeddingSlot]);
    for (uint32_t l = 0; l < c.num_layers; ++l) {
      view(Stage::AttentionOutput, static_cast<int>(l), stages[d.attention_slot(l)]);
      observer({Stage::RouterChoices, static_cast<int>(l), start, count, k, choices[l]});
      view(Stage::LayerOutput, static_cast<int>(l), stages[d.layer_slot(l)]);
    }
    view(Stage::FinalNorm, -1, stages[d.final_norm_slot()]);
  }
}

}  // namespace gptoss::vk

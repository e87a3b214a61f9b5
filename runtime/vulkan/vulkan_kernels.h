#pragma once
// The compute kernels of the Vulkan engine (shaders/*.comp) and their push-constant blocks. Each
// struct mirrors the shader's `Push` block field by field (std430 scalars, no padding).
#include <array>
#include <cstdint>
#include <optional>

#include "formats/core/dtype.h"
#include "runtime/vulkan/vulkan_context.h"

namespace gptoss::vk {

// How a dense tensor's bytes are decoded inside the kernels (shaders/dense_decode.glsl).
enum class DenseEncoding : uint32_t { F32 = 0, F16 = 1, BF16 = 2, Q8_0 = 3 };
// The kernels' encoding for a stored dtype, or nullopt when the kernels cannot read it.
std::optional<DenseEncoding> dense_encoding(DType dtype);

struct EmbedPush { uint32_t encoding, hidden; };
struct RmsNormPush { uint32_t dim, encoding; float eps; };
struct MatvecPush { uint32_t rows, cols, weight_encoding, bias_encoding, has_bias, accumulate, vectors, lanes; };
struct RopeStorePush { uint32_t heads, kv_heads, head_dim; float concentration; };
struct AttentionPush { uint32_t heads, kv_heads, head_dim, window, sink_encoding; float scale; uint32_t capacity; };
struct RouterTopkPush { uint32_t experts, k; };
struct ExpertMlp1Push { uint32_t hidden, intermediate, bias_encoding; float limit; };
struct ExpertMlp2Push { uint32_t hidden, intermediate, bias_encoding, k; };

inline constexpr uint32_t kMatvecMaxVectors = 8;
inline constexpr uint32_t kMaxExpertsPerToken = 32;  // router_topk / expert_mlp2 arrays
inline constexpr uint32_t kMaxExperts = 1024;        // router_topk's shared logits

// Workgroups of expert_mlp1_swiglu ({x, y}: 8 outputs per group, one y per selected expert) and
// of expert_mlp2_accumulate (8 outputs per group).
std::array<uint32_t, 2> expert_mlp1_groups(uint32_t intermediate, uint32_t experts_per_token);
uint32_t expert_mlp2_groups(uint32_t hidden);

// Lanes per row of matvec.comp for rows of `cols` values: about 4 blocks of 32 per lane, 1..32.
uint32_t matvec_lanes(uint32_t cols);
// Workgroups of a matvec over `rows` rows (64 / lanes per group), split over x and y to stay
// under the 65535 limit.
std::array<uint32_t, 2> matvec_groups(uint32_t rows, uint32_t lanes, uint32_t max_groups_x = 65535);
// Invocations of rope_store.comp, in workgroups of 64.
uint32_t rope_store_groups(uint32_t heads, uint32_t kv_heads, uint32_t head_dim);

// Every pipeline, built once per engine. Binding counts follow the shaders.
struct Kernels {
  explicit Kernels(const Context& ctx);
  Pipeline embed;        // table, step, x
  Pipeline rmsnorm;      // x, weight, y
  Pipeline matvec;       // weight, bias, x, y
  Pipeline rope_store;   // q, k_new, v_new, k_cache, v_cache, inv_freq, step
  Pipeline attention;    // q, k_cache, v_cache, sinks, scores, out, step
  Pipeline router_topk;  // logits, chosen, weights
  Pipeline expert_mlp1;  // blocks, scales, bias, x, chosen, act
  Pipeline expert_mlp2;  // blocks, scales, bias, act, chosen, weights, residual
};

}  // namespace gptoss::vk

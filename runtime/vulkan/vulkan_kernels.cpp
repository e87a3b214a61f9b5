#include "runtime/vulkan/vulkan_kernels.h"

namespace gptoss::vk {

std::optional<DenseEncoding> dense_encoding(DType dtype) {
  switch (dtype) {
    case DType::F32: return DenseEncoding::F32;
    case DType::F16: return DenseEncoding::F16;
    case DType::BF16: return DenseEncoding::BF16;
    case DType::Q8_0: return DenseEncoding::Q8_0;
    default: return std::nullopt;
  }
}

uint32_t matvec_lanes(uint32_t cols) {
  const uint32_t blocks = (cols + 31) / 32;
  uint32_t lanes = 1;
  while (lanes < 32 && lanes * 4 < blocks) lanes *= 2;
  return lanes;
}

std::array<uint32_t, 2> matvec_groups(uint32_t rows, uint32_t lanes, uint32_t max_groups_x) {
  const uint32_t rows_per_group = 64 / lanes;
  const uint32_t groups = (rows + rows_per_group - 1) / rows_per_group;
  if (groups <= max_groups_x) return {groups, 1};
  return {max_groups_x, (groups + max_groups_x - 1) / max_groups_x};
}

std::array<uint32_t, 2> expert_mlp1_groups(uint32_t intermediate, uint32_t experts_per_token) {
  return {(intermediate + 7) / 8, experts_per_token};
}

uint32_t expert_mlp2_groups(uint32_t hidden) { return (hidden + 7) / 8; }

uint32_t rope_store_groups(uint32_t heads, uint32_t kv_heads, uint32_t head_dim) {
  const uint32_t invocations = (heads + kv_heads) * (head_dim / 2) + kv_heads * head_dim;
  return (invocations + 63) / 64;
}

Kernels::Kernels(const Context& ctx)
    : embed(ctx, "embed", 3, sizeof(EmbedPush)),
      rmsnorm(ctx, "rmsnorm", 3, sizeof(RmsNormPush)),
      matvec(ctx, "matvec", 4, sizeof(MatvecPush)),
      rope_store(ctx, "rope_store", 7, sizeof(RopeStorePush)),
      attention(ctx, "attention", 7, sizeof(AttentionPush)),
      router_topk(ctx, "router_topk", 3, sizeof(RouterTopkPush)),
      expert_mlp1(ctx, "expert_mlp1_swiglu", 6, sizeof(ExpertMlp1Push)),
      expert_mlp2(ctx, "expert_mlp2_accumulate", 7, sizeof(ExpertMlp2Push)) {}

}  // namespace gptoss::vk

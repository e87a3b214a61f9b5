#pragma once
// The building blocks of the GPT-OSS forward pass, each on a batch of rows (one per token), in f32
// (the engine's default arithmetic) and in f64 (its high-precision reference mode). Products sum in
// the one fixed order of fixed_order_products.h, so a row's values never depend on the other rows;
// the rest are plain loops written to follow the reference math in shared/specs/safetensors_hf.md
// section 4 step by step.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace gptoss::cpu {

// y[rows, out] = x[rows, in] · weight[out, in]^T + bias[out] (bias may be null): each value the
// same bits whatever `rows` is (one token or a whole prefill).
void linear(const float* x, size_t rows, size_t in, const float* weight, size_t out, const float* bias, float* y);
void linear(const double* x, size_t rows, size_t in, const double* weight, size_t out, const double* bias, double* y);

// y = x · rsqrt(mean(x²) + eps) · weight, per row of `dim` values. The mean is accumulated in
// double so the reference is at least as accurate as the f32 implementations it is compared to.
void rms_norm(const float* x, size_t rows, size_t dim, const float* weight, double eps, float* y);
void rms_norm(const double* x, size_t rows, size_t dim, const double* weight, double eps, double* y);

// The MoE router's logits of `rows` tokens, from the residual stream x itself (not its normalized
// copy): logits[r][e] = (W[e] · (x[r] ⊙ norm)) · (1 / rms(x[r])) + bias[e]. Each x ⊙ norm is exact in
// double (two f32 values), the products with W and their sum in double (linear's order), 1/rms as
// rms_norm computes it but not rounded to Real, and the logit rounded to Real once after the bias:
// no rounding of the normalized input enters the router, so a near tie of two logits goes the way
// x decides. The weights come in double (the f32 engine's widened once at load: every f32 value is
// exact in double). The Vulkan engine's routers compute the same (shaders/router_sums.glsl).
void router_logits(const float* x, size_t rows, size_t dim, const float* norm, double eps, const double* weight,
                   size_t experts, const float* bias, float* logits);
void router_logits(const double* x, size_t rows, size_t dim, const double* norm, double eps, const double* weight,
                   size_t experts, const double* bias, double* logits);

// Rotates every head of one token in place with the half-split pairing of the canonical layout:
// element i pairs with i + D/2: (a, b) -> (a·cos − b·sin, b·cos + a·sin).
void apply_rope_half_split(float* heads, size_t head_count, size_t head_dim, const float* cos_table,
                           const float* sin_table);
void apply_rope_half_split(double* heads, size_t head_count, size_t head_dim, const double* cos_table,
                           const double* sin_table);

// The router: the k largest logits, in descending order; ties go to the lowest expert index.
std::vector<uint32_t> top_k_experts(std::span<const float> logits, size_t k);
std::vector<uint32_t> top_k_experts(std::span<const double> logits, size_t k);
// Softmax over the selected logits only (the gpt-oss gating).
std::vector<float> softmax_of(std::span<const float> logits, std::span<const uint32_t> selected);
std::vector<double> softmax_of(std::span<const double> logits, std::span<const uint32_t> selected);

// GPT-OSS SwiGLU on one token's interleaved mlp1 output [2I] -> act [I]:
// gate = min(g, limit), up = clamp(u, −limit, limit), act = (up + 1) · gate · sigmoid(1.702 · gate).
inline constexpr float kSwigluAlpha = 1.702f;
void swiglu_interleaved(const float* gate_up, size_t intermediate, float limit, float* act);
void swiglu_interleaved(const double* gate_up, size_t intermediate, double limit, double* act);

}  // namespace gptoss::cpu

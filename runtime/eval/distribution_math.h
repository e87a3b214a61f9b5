#pragma once
// The arithmetic of one scored position: a row of logits as a next-token distribution
// (log-softmax), and a candidate's distribution against a reference's (KL divergence, top-1,
// probability of the reference's top token). Rows are 201088 values, so every pass is written to
// vectorize (8 lanes, AVX2 where the CPU has it), exp is evaluated in f32 to ~1 ulp and every sum
// is accumulated in f64.
#include <cstdint>
#include <span>

namespace gptoss::eval {

// A row of logits v (any offset: the distribution is softmax(v)).
struct RowSummary {
  float max = 0;          // the largest value
  uint32_t argmax = 0;    // its index (the lowest of equal values)
  double log_norm = 0;    // log sum_i exp(v_i): log p(i) = v_i - log_norm
};
RowSummary summarize_row(std::span<const float> logits);

// The candidate against the reference at one position. Both rows must have the same length: the
// rows both models hold; each distribution is the softmax over exactly those rows, so a model
// with more rows is renormalized over the shared ones.
struct PositionComparison {
  double kl = 0;            // KL(P_ref || Q_cand) = sum_i P_i (log P_i - log Q_i), nats, clamped at 0
  uint32_t ref_top = 0;     // argmax of the reference
  uint32_t cand_top = 0;    // argmax of the candidate
  double p_ref_top = 0;     // P_ref(ref_top)
  double q_ref_top = 0;     // Q_cand(ref_top)
  double ref_log_norm = 0;  // log sum exp over the rows compared (the RowSummary of each, for free)
  double cand_log_norm = 0;
};
PositionComparison compare_position(std::span<const float> reference, std::span<const float> candidate);

// exp(x) for x <= 0 to ~1 ulp; 0 below -87 (where exp underflows f32's normal range).
float exp_nonpositive(float x);

}  // namespace gptoss::eval

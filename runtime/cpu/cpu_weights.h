#pragma once
// Every weight of a canonical GPT-OSS model decoded exactly to f32, once, at load. This is the
// reference engine's ground truth: BF16/F16/F32/Q8_0 dense tensors go through decode_to_f32 and
// the experts through the OpenAI MXFP4 dequantizer, so every value equals what the file means.
// Memory is 4 bytes per parameter: meant for small models and layer-by-layer parity checks.
#include <cstdint>
#include <vector>

#include "convert/canonical_model.h"

namespace gptoss::cpu {

// `Real` is float for the engine's f32 arithmetic and double for its f64 reference mode (the
// f32 values widened: every decoded weight is exact in f32 already).
template <class Real>
struct BasicCpuLayerWeights {
  std::vector<Real> attn_norm;            // [H]
  std::vector<Real> q, q_bias;            // [heads*D, H], [heads*D]
  std::vector<Real> k, k_bias;            // [kv*D, H], [kv*D]
  std::vector<Real> v, v_bias;            // [kv*D, H], [kv*D]
  std::vector<Real> out, out_bias;        // [H, heads*D], [H]
  std::vector<Real> sinks;                // [heads]
  std::vector<Real> mlp_norm;             // [H]
  std::vector<Real> router, router_bias;  // [E, H], [E]
  std::vector<Real> mlp1, mlp1_bias;      // [E, 2I, H] rows interleaved gate (even) / up (odd), [E, 2I]
  std::vector<Real> mlp2, mlp2_bias;      // [E, H, I], [E, H]
};

template <class Real>
struct BasicCpuWeights {
  GptOssConfig config;
  std::vector<Real> embedding;    // [V, H]
  std::vector<Real> final_norm;   // [H]
  std::vector<Real> unembedding;  // [V, H]
  std::vector<BasicCpuLayerWeights<Real>> layers;
};

using CpuLayerWeights = BasicCpuLayerWeights<float>;
using CpuWeights = BasicCpuWeights<float>;

// The same weights in double, releasing the f32 copies as it goes (peak: one tensor in both).
BasicCpuWeights<double> widen_to_f64(CpuWeights weights);

// Throws FormatError (naming the tensor's origin) when a tensor's encoding cannot be decoded or
// its byte size does not match its shape.
CpuWeights decode_cpu_weights(const CanonicalModel& model);

// One dense tensor decoded to f32 (exposed for tests).
std::vector<float> decode_dense_tensor(const CanonicalTensor& tensor);
// An expert pair (blocks + scales, OpenAI layout) dequantized to f32 rows [E, rows, in].
std::vector<float> decode_mxfp4_experts(const CanonicalTensor& blocks, const CanonicalTensor& scales);

}  // namespace gptoss::cpu

#include "runtime/cpu/cpu_weights.h"

#include "formats/codecs/float_codec.h"
#include "formats/codecs/mxfp4.h"
#include "formats/core/checked_math.h"
#include "formats/core/error.h"
#include "formats/core/tensor_source.h"

namespace gptoss::cpu {
namespace {

uint64_t element_count(const CanonicalTensor& tensor) {
  const auto count = checked_product(tensor.spec.shape);
  if (!count) throw_format_error(tensor.origin, tensor.spec.name, std::nullopt, "element count overflows");
  return *count;
}

// The tensor's bytes, zero copy when the source is a mapped range.
struct TensorBytes {
  std::vector<uint8_t> owned;
  std::span<const uint8_t> view;
};

TensorBytes tensor_bytes(const CanonicalTensor& tensor, uint64_t expected_size) {
  TensorBytes bytes;
  if (tensor.source->size() != expected_size)
    throw_format_error(tensor.origin, tensor.spec.name, std::nullopt,
                       "holds " + std::to_string(tensor.source->size()) + " bytes, its shape and " +
                           std::string(dtype_name(tensor.dtype)) + " need " + std::to_string(expected_size));
  if (auto view = tensor.source->contiguous()) {
    bytes.view = *view;
  } else {
    bytes.owned = read_all(*tensor.source);
    bytes.view = bytes.owned;
  }
  return bytes;
}

}  // namespace

std::vector<float> decode_dense_tensor(const CanonicalTensor& tensor) {
  if (!is_decodable(tensor.dtype) || tensor.dtype == DType::MXFP4)
    throw_format_error(tensor.origin, tensor.spec.name, std::nullopt,
                       "dense tensor stored as " + std::string(dtype_name(tensor.dtype)) +
                           ", which the CPU engine cannot decode (expected F32, F16, BF16, F64 or Q8_0)");
  const uint64_t elements = element_count(tensor);
  const auto size = dtype_byte_size(tensor.dtype, elements);
  if (!size)
    throw_format_error(tensor.origin, tensor.spec.name, std::nullopt,
                       std::to_string(elements) + " elements are not a whole number of " +
                           std::string(dtype_name(tensor.dtype)) + " blocks");
  const auto bytes = tensor_bytes(tensor, *size);
  std::vector<float> values(elements);
  decode_to_f32(tensor.dtype, bytes.view.data(), elements, values.data());
  return values;
}

std::vector<float> decode_mxfp4_experts(const CanonicalTensor& blocks, const CanonicalTensor& scales) {
  if (blocks.dtype != DType::U8 || scales.dtype != DType::U8)
    throw_format_error(blocks.origin, blocks.spec.name, std::nullopt, "MXFP4 experts must be U8 blocks and scales");
  const uint64_t block_count = element_count(scales);
  if (element_count(blocks) != block_count * kMxfp4OaiBlockBytes)
    throw_format_error(blocks.origin, blocks.spec.name, std::nullopt,
                       "blocks and scales disagree on the number of MXFP4 blocks");
  const auto block_bytes = tensor_bytes(blocks, block_count * kMxfp4OaiBlockBytes);
  const auto scale_bytes = tensor_bytes(scales, block_count);
  std::vector<float> values(block_count * kMxfp4BlockElements);
  mxfp4::dequantize_oai(block_bytes.view.data(), scale_bytes.view.data(), block_count, values.data());
  return values;
}

CpuWeights decode_cpu_weights(const CanonicalModel& model) {
  CpuWeights w;
  w.config = model.config;
  auto dense = [&](TensorRole role, int layer = -1) { return decode_dense_tensor(model.get(role, layer)); };
  w.embedding = dense(TensorRole::Embedding);
  w.final_norm = dense(TensorRole::FinalNorm);
  w.unembedding = dense(TensorRole::Unembedding);
  w.layers.resize(model.config.num_layers);
  for (uint32_t i = 0; i < model.config.num_layers; ++i) {
    const int l = static_cast<int>(i);
    auto& layer = w.layers[i];
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
    layer.mlp1 = decode_mxfp4_experts(model.get(TensorRole::Mlp1Blocks, l), model.get(TensorRole::Mlp1Scales, l));
    layer.mlp1_bias = dense(TensorRole::Mlp1Bias, l);
    layer.mlp2 = decode_mxfp4_experts(model.get(TensorRole::Mlp2Blocks, l), model.get(TensorRole::Mlp2Scales, l));
    layer.mlp2_bias = dense(TensorRole::Mlp2Bias, l);
  }
  return w;
}

namespace {
std::vector<double> widen(std::vector<float>& values) {
  std::vector<double> wide(values.begin(), values.end());
  std::vector<float>().swap(values);
  return wide;
}
}  // namespace

BasicCpuWeights<double> widen_to_f64(CpuWeights weights) {
  BasicCpuWeights<double> w;
  w.config = weights.config;
  w.embedding = widen(weights.embedding);
  w.final_norm = widen(weights.final_norm);
  w.unembedding = widen(weights.unembedding);
  w.layers.resize(weights.layers.size());
  for (size_t i = 0; i < weights.layers.size(); ++i) {
    auto& from = weights.layers[i];
    auto& to = w.layers[i];
    for (auto [source, target] : {std::pair{&from.attn_norm, &to.attn_norm}, {&from.q, &to.q}, {&from.q_bias, &to.q_bias},
                                  {&from.k, &to.k}, {&from.k_bias, &to.k_bias}, {&from.v, &to.v},
                                  {&from.v_bias, &to.v_bias}, {&from.out, &to.out}, {&from.out_bias, &to.out_bias},
                                  {&from.sinks, &to.sinks}, {&from.mlp_norm, &to.mlp_norm}, {&from.router, &to.router},
                                  {&from.router_bias, &to.router_bias}, {&from.mlp1, &to.mlp1},
                                  {&from.mlp1_bias, &to.mlp1_bias}, {&from.mlp2, &to.mlp2},
                                  {&from.mlp2_bias, &to.mlp2_bias}})
      *target = widen(*source);
  }
  return w;
}

}  // namespace gptoss::cpu

#include "runtime/cpu/cpu_weights.h"

#include <algorithm>
#include <type_traits>

#include "formats/codecs/float_codec.h"
#include "formats/codecs/mxfp4.h"
#include "formats/core/checked_math.h"
#include "formats/core/error.h"
#include "formats/core/parallel_for.h"
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

std::string shape_text(const std::vector<uint64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

// The tensor's bytes for as long as the returned owner lives: a view of the source itself when it
// is contiguous in memory (a mapped file), else one copy, read in parallel slices (a generated or
// repacked source produces its bytes on the fly; sources are thread-safe for disjoint ranges).
std::span<const uint8_t> keep_bytes(const CanonicalTensor& tensor, uint64_t expected_size,
                                    std::shared_ptr<const void>& owner) {
  if (tensor.source->size() != expected_size)
    throw_format_error(tensor.origin, tensor.spec.name, std::nullopt,
                       "holds " + std::to_string(tensor.source->size()) + " bytes, its shape and " +
                           std::string(dtype_name(tensor.dtype)) + " need " + std::to_string(expected_size));
  if (auto view = tensor.source->contiguous()) {
    owner = tensor.source;
    return *view;
  }
  // Not a std::vector: its zero fill would touch every page once more for nothing.
  std::shared_ptr<uint8_t[]> copy = std::make_shared_for_overwrite<uint8_t[]>(expected_size);
  const uint64_t granularity = std::max<uint64_t>(1, tensor.source->granularity());
  const uint64_t slice = std::max<uint64_t>(1, (64u << 20) / granularity) * granularity;
  const uint64_t slices = (expected_size + slice - 1) / slice;
  parallel_for(slices, 0, [&](size_t i) {
    const uint64_t offset = i * slice, size = std::min(slice, expected_size - offset);
    tensor.source->read(offset, std::span<uint8_t>(copy.get() + offset, size));
    tensor.source->release_range(offset, size);  // a mapped input's pages behind it (GGUF, model.bin)
  });
  const std::span<const uint8_t> bytes(copy.get(), expected_size);
  owner = std::move(copy);
  return bytes;
}

// Both values of an OpenAI MXFP4 byte (element 2j in the low nibble, 2j + 1 in the high one) under
// each scale byte: pairs[256 * scale + byte], each the f32 product FP4[code] * 2^(scale - 127)
// that mxfp4::dequantize_oai writes, widened for double (exact). One load and one store per byte
// instead of two lookups; 512 KiB (f32) or 1 MiB (f64), of which a model's few scales touch little.
template <class Real>
struct ValuePair {
  Real low, high;
};

template <class Real>
const ValuePair<Real>* value_pairs() {
  static const std::vector<ValuePair<Real>> pairs = [] {
    std::vector<ValuePair<Real>> all(256 * 256);
    for (unsigned scale = 0; scale < 256; ++scale) {
      const float s = mxfp4::scale_value(static_cast<uint8_t>(scale));
      for (unsigned byte = 0; byte < 256; ++byte)
        all[256 * scale + byte] = {static_cast<Real>(mxfp4::kFp4Values[byte & 0x0f] * s),
                                   static_cast<Real>(mxfp4::kFp4Values[byte >> 4] * s)};
    }
    return all;
  }();
  return pairs.data();
}

template <class Real>
void decode_blocks(const uint8_t* blocks, const uint8_t* scales, uint64_t block_count, Real* out) {
  static_assert(sizeof(ValuePair<Real>) == 2 * sizeof(Real));
  const ValuePair<Real>* pairs = value_pairs<Real>();
  for (uint64_t b = 0; b < block_count; ++b) {
    const ValuePair<Real>* under_scale = pairs + 256 * size_t{scales[b]};
    const uint8_t* block = blocks + 16 * b;
    Real* o = out + 32 * b;
    for (unsigned j = 0; j < 16; ++j) {
      const ValuePair<Real>& pair = under_scale[block[j]];
      o[2 * j] = pair.low;
      o[2 * j + 1] = pair.high;
    }
  }
}

}  // namespace

ExpertMatrices::ExpertMatrices(const CanonicalTensor& blocks, const CanonicalTensor& scales) {
  const auto& bs = blocks.spec.shape;
  const auto& ss = scales.spec.shape;
  if (!holds_mxfp4(blocks)) {
    // A matrix in another type: [experts, rows, columns] as the type stores it, no scales.
    if (!is_decodable(blocks.dtype) || blocks.dtype == DType::MXFP4)
      throw_format_error(blocks.origin, blocks.spec.name, std::nullopt,
                         "experts stored as " + std::string(dtype_name(blocks.dtype)) +
                             ", which the CPU engine cannot decode (expected the MXFP4 pair or a type the codecs decode)");
    if (bs.size() != 3 || scales.dtype != DType::U8 || ss.size() != 3 || ss[0] != bs[0] || ss[1] != bs[1] || ss[2] != 0)
      throw_format_error(blocks.origin, blocks.spec.name, std::nullopt,
                         std::string(dtype_name(blocks.dtype)) +
                             " experts need a matrix [experts, rows, columns] and empty U8 scales [experts, rows, 0]; "
                             "found " + shape_text(bs) + " and " + shape_text(ss));
    const auto row_bytes = dtype_row_bytes(blocks.dtype, bs[2]);
    const auto rows = checked_mul(bs[0], bs[1]);
    const auto size = row_bytes && rows ? checked_mul(*row_bytes, *rows) : std::nullopt;
    if (!size)
      throw_format_error(blocks.origin, blocks.spec.name, std::nullopt,
                         "rows of " + std::to_string(bs[2]) + " values are not a whole number of " +
                             std::string(dtype_name(blocks.dtype)) + " blocks");
    dtype_ = blocks.dtype;
    experts_ = bs[0];
    rows_ = bs[1];
    columns_ = bs[2];
    row_bytes_ = *row_bytes;
    blocks_ = keep_bytes(blocks, *size, owner_);
    return;
  }
  if (scales.dtype != DType::U8)
    throw_format_error(blocks.origin, blocks.spec.name, std::nullopt, "MXFP4 experts must be U8 blocks and scales");
  if (bs.size() != 4 || bs[3] != kMxfp4OaiBlockBytes || ss.size() != 3 || ss[0] != bs[0] || ss[1] != bs[1] ||
      ss[2] != bs[2])
    throw_format_error(blocks.origin, blocks.spec.name, std::nullopt,
                       "MXFP4 experts need blocks [experts, rows, blocks, 16] and scales [experts, rows, blocks]; "
                       "found " + shape_text(bs) + " and " + shape_text(ss));
  const uint64_t block_count = element_count(scales);
  experts_ = bs[0];
  rows_ = bs[1];
  columns_ = bs[2] * kMxfp4BlockElements;
  std::shared_ptr<const void> block_owner, scale_owner;
  blocks_ = keep_bytes(blocks, block_count * kMxfp4OaiBlockBytes, block_owner);
  scales_ = keep_bytes(scales, block_count, scale_owner);
  // One owner for both: a pair of shared pointers in one allocation.
  owner_ = std::make_shared<std::pair<std::shared_ptr<const void>, std::shared_ptr<const void>>>(
      std::move(block_owner), std::move(scale_owner));
}

void ExpertMatrices::decode_rows(uint64_t expert, uint64_t first_row, uint64_t row_count, float* out) const {
  if (!mxfp4()) {  // the type's decoder, through the DType table
    const auto& info = dtype_info(dtype_);
    info.decode(blocks_.data() + (expert * rows_ + first_row) * row_bytes_, row_count * columns_ / info.block_elements, out);
    return;
  }
  const uint64_t row_blocks = columns_ / kMxfp4BlockElements, first_block = (expert * rows_ + first_row) * row_blocks;
  decode_blocks(blocks_.data() + first_block * kMxfp4OaiBlockBytes, scales_.data() + first_block,
                row_count * row_blocks, out);
}

void ExpertMatrices::decode_rows(uint64_t expert, uint64_t first_row, uint64_t row_count, double* out) const {
  if (!mxfp4()) {  // in f32, then widened (exact)
    std::vector<float> values(row_count * columns_);
    decode_rows(expert, first_row, row_count, values.data());
    std::copy(values.begin(), values.end(), out);
    return;
  }
  const uint64_t row_blocks = columns_ / kMxfp4BlockElements, first_block = (expert * rows_ + first_row) * row_blocks;
  decode_blocks(blocks_.data() + first_block * kMxfp4OaiBlockBytes, scales_.data() + first_block,
                row_count * row_blocks, out);
}

std::vector<float> ExpertMatrices::decode_all() const {
  std::vector<float> values(experts_ * rows_ * columns_);
  for (uint64_t e = 0; e < experts_; ++e) decode_rows(e, 0, rows_, values.data() + e * rows_ * columns_);
  return values;
}

namespace {

// The tensor's element count and byte size, checked: a decodable dense encoding, whole blocks.
std::pair<uint64_t, uint64_t> dense_size(const CanonicalTensor& tensor) {
  if (!is_decodable(tensor.dtype) || tensor.dtype == DType::MXFP4)
    throw_format_error(tensor.origin, tensor.spec.name, std::nullopt,
                       "dense tensor stored as " + std::string(dtype_name(tensor.dtype)) +
                           ", which the CPU engine cannot decode (expected F32, F16, BF16, F64, Q8_0 or another of "
                           "ggml's quantizations the codecs decode)");
  const uint64_t elements = element_count(tensor);
  const auto size = dtype_byte_size(tensor.dtype, elements);
  if (!size)
    throw_format_error(tensor.origin, tensor.spec.name, std::nullopt,
                       std::to_string(elements) + " elements are not a whole number of " +
                           std::string(dtype_name(tensor.dtype)) + " blocks");
  return {elements, *size};
}

// decode_dense_tensor's values in Real: for double, decoded to f32 a slice at a time and widened
// (exact) into a vector that is written once, never zero-filled first.
template <class Real>
std::vector<Real> decode_dense(const CanonicalTensor& tensor) {
  if constexpr (std::is_same_v<Real, float>) {
    return decode_dense_tensor(tensor);
  } else {
    const auto [elements, size] = dense_size(tensor);
    const auto bytes = tensor_bytes(tensor, size);
    constexpr uint64_t kSlice = 1u << 14;  // a multiple of every block size
    const uint64_t slice_bytes = *dtype_byte_size(tensor.dtype, std::min(kSlice, elements));
    std::vector<float> slice(std::min(kSlice, elements));
    std::vector<Real> values;
    values.reserve(elements);
    for (uint64_t done = 0, offset = 0; done < elements; done += kSlice, offset += slice_bytes) {
      const uint64_t n = std::min(kSlice, elements - done);
      decode_to_f32(tensor.dtype, bytes.view.data() + offset, n, slice.data());
      values.insert(values.end(), slice.begin(), slice.begin() + static_cast<std::ptrdiff_t>(n));
    }
    tensor.source->release_pages();
    return values;
  }
}

}  // namespace

std::vector<float> decode_dense_tensor(const CanonicalTensor& tensor) {
  const auto [elements, size] = dense_size(tensor);
  const auto bytes = tensor_bytes(tensor, size);
  std::vector<float> values(elements);
  decode_to_f32(tensor.dtype, bytes.view.data(), elements, values.data());
  tensor.source->release_pages();  // a mapped file's pages: the values are all the engine keeps
  return values;
}

DenseRows::DenseRows(const CanonicalTensor& tensor) : dtype_(tensor.dtype) {
  const uint64_t size = dense_size(tensor).second;
  const auto& shape = tensor.spec.shape;
  const auto row_bytes = shape.size() == 2 ? dtype_row_bytes(tensor.dtype, shape[1]) : std::nullopt;
  if (!row_bytes)
    throw_format_error(tensor.origin, tensor.spec.name, std::nullopt,
                       "needs [rows, columns] with whole " + std::string(dtype_name(tensor.dtype)) +
                           " blocks per row; found " + shape_text(shape));
  rows_ = shape[0];
  columns_ = shape[1];
  row_bytes_ = *row_bytes;
  bytes_ = keep_bytes(tensor, size, owner_);
}

void DenseRows::decode_row(uint64_t row, float* out) const {
  decode_to_f32(dtype_, bytes_.data() + row * row_bytes_, columns_, out);
}

std::vector<float> DenseRows::decode_all() const {
  std::vector<float> values(rows_ * columns_);
  decode_to_f32(dtype_, bytes_.data(), values.size(), values.data());
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

namespace {

template <class Real>
BasicCpuWeights<Real> decode_weights(const CanonicalModel& model) {
  BasicCpuWeights<Real> w;
  w.config = model.config;
  auto dense = [&](TensorRole role) { return decode_dense<Real>(model.get(role, -1)); };
  const uint64_t hidden = model.config.hidden_size, inter = model.config.intermediate_size;
  auto experts = [&](TensorRole blocks_role, TensorRole scales_role, int layer, uint64_t rows, uint64_t columns) {
    const auto& blocks = model.get(blocks_role, layer);
    ExpertMatrices e(blocks, model.get(scales_role, layer));
    if (e.experts() != model.config.num_experts || e.rows() != rows || e.columns() != columns)
      throw_format_error(blocks.origin, blocks.spec.name, std::nullopt,
                         "holds " + std::to_string(e.experts()) + " experts of " + std::to_string(e.rows()) + " x " +
                             std::to_string(e.columns()) + "; the config needs " +
                             std::to_string(model.config.num_experts) + " of " + std::to_string(rows) + " x " +
                             std::to_string(columns));
    return e;
  };
  w.embedding = DenseRows(model.get(TensorRole::Embedding, -1));
  w.final_norm = dense(TensorRole::FinalNorm);
  w.unembedding = dense(TensorRole::Unembedding);
  w.layers.resize(model.config.num_layers);
  for (uint32_t i = 0; i < model.config.num_layers; ++i) {
    const int l = static_cast<int>(i);
    auto& layer = w.layers[i];
    // The layer's roles from the one list (kLayerRoles); -Wswitch names a role left out here.
    for_each_layer_tensor(model, l, [&](TensorRole role, const CanonicalTensor& tensor) {
      switch (role) {
        case TensorRole::AttnNorm: layer.attn_norm = decode_dense<Real>(tensor); break;
        case TensorRole::AttnQ: layer.q = decode_dense<Real>(tensor); break;
        case TensorRole::AttnQBias: layer.q_bias = decode_dense<Real>(tensor); break;
        case TensorRole::AttnK: layer.k = decode_dense<Real>(tensor); break;
        case TensorRole::AttnKBias: layer.k_bias = decode_dense<Real>(tensor); break;
        case TensorRole::AttnV: layer.v = decode_dense<Real>(tensor); break;
        case TensorRole::AttnVBias: layer.v_bias = decode_dense<Real>(tensor); break;
        case TensorRole::AttnOut: layer.out = decode_dense<Real>(tensor); break;
        case TensorRole::AttnOutBias: layer.out_bias = decode_dense<Real>(tensor); break;
        case TensorRole::AttnSinks: layer.sinks = decode_dense<Real>(tensor); break;
        case TensorRole::MlpNorm: layer.mlp_norm = decode_dense<Real>(tensor); break;
        case TensorRole::RouterWeight: layer.router = decode_dense<double>(tensor); break;
        case TensorRole::RouterBias: layer.router_bias = decode_dense<Real>(tensor); break;
        case TensorRole::Mlp1Bias: layer.mlp1_bias = decode_dense<Real>(tensor); break;
        case TensorRole::Mlp2Bias: layer.mlp2_bias = decode_dense<Real>(tensor); break;
        // An expert pair is read at its scales, the second of the two in kLayerRoles.
        case TensorRole::Mlp1Scales: layer.mlp1 = experts(TensorRole::Mlp1Blocks, role, l, 2 * inter, hidden); break;
        case TensorRole::Mlp2Scales: layer.mlp2 = experts(TensorRole::Mlp2Blocks, role, l, hidden, inter); break;
        case TensorRole::Mlp1Blocks: case TensorRole::Mlp2Blocks: break;
        case TensorRole::Embedding: case TensorRole::FinalNorm: case TensorRole::Unembedding: break;  // not per layer
      }
    });
  }
  return w;
}

}  // namespace

CpuWeights decode_cpu_weights(const CanonicalModel& model) { return decode_weights<float>(model); }
BasicCpuWeights<double> decode_cpu_weights_f64(const CanonicalModel& model) { return decode_weights<double>(model); }

void predecode_experts(CpuWeights& weights) {
  auto decode = [](const ExpertMatrices& experts) {
    std::vector<float> values(experts.experts() * experts.rows() * experts.columns());
    if (experts.mxfp4())
      mxfp4::dequantize_oai(experts.blocks().data(), experts.scales().data(), experts.scales().size(), values.data());
    else
      decode_to_f32(experts.dtype(), experts.blocks().data(), values.size(), values.data());
    return values;
  };
  for (auto& layer : weights.layers) {
    layer.mlp1_decoded = decode(layer.mlp1);
    layer.mlp2_decoded = decode(layer.mlp2);
  }
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
  w.embedding = std::move(weights.embedding);
  w.final_norm = widen(weights.final_norm);
  w.unembedding = widen(weights.unembedding);
  w.layers.resize(weights.layers.size());
  for (size_t i = 0; i < weights.layers.size(); ++i) {
    auto& from = weights.layers[i];
    auto& to = w.layers[i];
    for (auto [source, target] : {std::pair{&from.attn_norm, &to.attn_norm}, {&from.q, &to.q}, {&from.q_bias, &to.q_bias},
                                  {&from.k, &to.k}, {&from.k_bias, &to.k_bias}, {&from.v, &to.v},
                                  {&from.v_bias, &to.v_bias}, {&from.out, &to.out}, {&from.out_bias, &to.out_bias},
                                  {&from.sinks, &to.sinks}, {&from.mlp_norm, &to.mlp_norm},
                                  {&from.router_bias, &to.router_bias}, {&from.mlp1_bias, &to.mlp1_bias},
                                  {&from.mlp2_bias, &to.mlp2_bias}, {&from.mlp1_decoded, &to.mlp1_decoded},
                                  {&from.mlp2_decoded, &to.mlp2_decoded}})
      *target = widen(*source);
    to.router = std::move(from.router);
    to.mlp1 = std::move(from.mlp1);
    to.mlp2 = std::move(from.mlp2);
  }
  return w;
}

}  // namespace gptoss::cpu

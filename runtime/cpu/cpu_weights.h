#pragma once
// The weights of a canonical GPT-OSS model as the reference engine reads them, every value exactly
// what the file means. Dense tensors (F32, F16, BF16, F64, Q8_0 and ggml's other quantizations)
// are decoded once, at load, through decode_to_f32 (and widened to double for the f64 engine):
// Real-width, 4 or 8 bytes per parameter. The experts (mlp1, mlp2: ~95% of the parameters) stay in
// their stored encoding (the OpenAI MXFP4 pair, 17 bytes per 32 values, 0.53 bytes per parameter;
// or a GGUF's Q8_0, Q4_1, ... experts) and are decoded one expert at a time, just before its GEMM
// (ExpertMatrices::decode_rows): decoding is exact, so this gives the same numbers as decoding
// everything at load. The embedding stays in its stored encoding too (DenseRows: a forward reads
// one row per token). Host memory at the real shapes: the table in docs/cpu-engine.md ("Memory").
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "convert/canonical_model.h"

namespace gptoss::cpu {

// One layer's mlp1 or mlp2 experts, [experts, rows, columns] values, kept as stored: the OpenAI
// MXFP4 pair, blocks [experts, rows, columns / 32, 16] bytes (element 2j in the low nibble of byte
// j) and scales [experts, rows, columns / 32] E8M0 bytes; or one matrix in another type the codecs
// decode (canonical_model.h), whose rows decode_rows decodes through the DType table. The bytes are
// a view of the tensor's source when it lies in memory (a mapped file: the pages stay the page
// cache's, and the source is kept alive), else one owned copy read at load (generated or repacked
// sources: synth:, GGUF, model.bin). Copies share the bytes, which never change.
class ExpertMatrices {
 public:
  ExpertMatrices() = default;
  // Throws FormatError (naming the tensor) unless blocks and scales are the MXFP4 pair (U8 of
  // matching shapes and sizes) or a decodable matrix [experts, rows, columns] and empty scales.
  ExpertMatrices(const CanonicalTensor& blocks, const CanonicalTensor& scales);

  DType dtype() const { return dtype_; }  // U8: the MXFP4 pair
  bool mxfp4() const { return dtype_ == DType::U8; }
  uint64_t experts() const { return experts_; }
  uint64_t rows() const { return rows_; }        // per expert
  uint64_t columns() const { return columns_; }  // per row, a whole number of the type's blocks
  uint64_t byte_size() const { return blocks_.size() + scales_.size(); }
  std::span<const uint8_t> blocks() const { return blocks_; }  // the MXFP4 blocks, or the matrix's bytes
  std::span<const uint8_t> scales() const { return scales_; }  // empty for a matrix in another type

  // Rows [first_row, first_row + row_count) of expert `expert`, decoded exactly (the values of
  // mxfp4::dequantize_oai, or of the type's decoder, widened for double) into
  // out[row_count * columns]. Thread-safe.
  void decode_rows(uint64_t expert, uint64_t first_row, uint64_t row_count, float* out) const;
  void decode_rows(uint64_t expert, uint64_t first_row, uint64_t row_count, double* out) const;
  // Every expert, [experts, rows, columns] f32 (tests and small models).
  std::vector<float> decode_all() const;

 private:
  DType dtype_ = DType::U8;
  uint64_t experts_ = 0, rows_ = 0, columns_ = 0;
  uint64_t row_bytes_ = 0;  // a matrix in another type: bytes of one row
  std::shared_ptr<const void> owner_;  // keeps the bytes alive: the source, or the owned copy
  std::span<const uint8_t> blocks_, scales_;
};

// A dense [rows, columns] matrix kept in its stored encoding (F32, F16, BF16, F64 or Q8_0, a row
// a whole number of blocks), each row decoded when it is read, to exactly the values
// decode_dense_tensor gives: the embedding, of which a forward reads one row per token. Decoding
// all of it at load wrote the whole vocabulary (201088 rows; 4 or 8 bytes a value) for the few
// rows a forward reads, most of a small model's start-up. The bytes are kept as Mxfp4Experts
// keeps its own (a view of a mapped source, else one owned copy); copies share them.
class DenseRows {
 public:
  DenseRows() = default;
  // Throws FormatError (naming the tensor) unless it is 2-D in a decodable dense encoding whose
  // rows are whole blocks and its bytes match its shape.
  explicit DenseRows(const CanonicalTensor& tensor);

  uint64_t rows() const { return rows_; }
  uint64_t columns() const { return columns_; }
  // Row `row` (< rows()) into out[columns()].
  void decode_row(uint64_t row, float* out) const;
  // Every row, [rows, columns] f32 (tests).
  std::vector<float> decode_all() const;

 private:
  DType dtype_ = DType::F32;
  uint64_t rows_ = 0, columns_ = 0, row_bytes_ = 0;
  std::shared_ptr<const void> owner_;
  std::span<const uint8_t> bytes_;
};

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
  // [E, H] in double for either Real: router_logits sums its products in double, so the weights are
  // widened once at load instead of on every forward.
  std::vector<double> router;
  std::vector<Real> router_bias;          // [E]
  ExpertMatrices mlp1;                    // [E, 2I, H], rows interleaved gate (even) / up (odd)
  std::vector<Real> mlp1_bias;            // [E, 2I]
  ExpertMatrices mlp2;                    // [E, H, I]
  std::vector<Real> mlp2_bias;            // [E, H]
  // Empty unless predecode_experts filled them: every expert decoded at load, [E, 2I, H] and
  // [E, H, I] (the engine's layout before the experts stayed encoded, 4 or 8 bytes per parameter).
  // The engine then reads these instead of decoding per expert; tests use it as the reference.
  std::vector<Real> mlp1_decoded, mlp2_decoded;
};

template <class Real>
struct BasicCpuWeights {
  GptOssConfig config;
  DenseRows embedding;            // [V, H], as stored
  std::vector<Real> final_norm;   // [H]
  std::vector<Real> unembedding;  // [V, H]
  std::vector<BasicCpuLayerWeights<Real>> layers;
};

using CpuLayerWeights = BasicCpuLayerWeights<float>;
using CpuWeights = BasicCpuWeights<float>;

// Decodes every expert of every layer at once into mlp1_decoded / mlp2_decoded, through
// mxfp4::dequantize_oai or decode_to_f32 (tests: the reference the per-expert decoding must equal
// bit for bit).
void predecode_experts(CpuWeights& weights);

// The same weights with the dense tensors in double, releasing the f32 copies as it goes (peak:
// one tensor in both); the experts and the embedding move over as they are (stored; predecoded
// experts are widened).
BasicCpuWeights<double> widen_to_f64(CpuWeights weights);

// Throws FormatError (naming the tensor's origin) when a tensor's encoding cannot be decoded, its
// byte size does not match its shape, or the experts' shapes do not match the config. The double
// weights are decode_cpu_weights' widened (widen_to_f64's values), decoded straight to double.
CpuWeights decode_cpu_weights(const CanonicalModel& model);
BasicCpuWeights<double> decode_cpu_weights_f64(const CanonicalModel& model);

// One dense tensor decoded to f32 (exposed for tests).
std::vector<float> decode_dense_tensor(const CanonicalTensor& tensor);
// An expert pair (blocks + scales, OpenAI layout) dequantized to f32 rows [E, rows, in] at once,
// through mxfp4::dequantize_oai (the tests' reference for ExpertMatrices).
std::vector<float> decode_mxfp4_experts(const CanonicalTensor& blocks, const CanonicalTensor& scales);

}  // namespace gptoss::cpu

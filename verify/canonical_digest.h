#pragma once
// Canonical digests: a SHA-256 per canonical tensor over its values in the canonical layout, so
// the same weights give the same digest in every format that stores them losslessly:
//   dense tensors (BF16, F16, F32, Q8_0 ...): the values decoded to f32, little-endian;
//   MXFP4 blocks and scales: the OpenAI-layout bytes (after each reader undid its own repack,
//   nibble order, scale offset, RoPE interleave or prescale).
// The model digest hashes the list of "name digest" lines.
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "convert/canonical_model.h"

namespace gptoss {

struct TensorDigest {
  std::string name;
  std::string sha256;
};

std::string canonical_tensor_digest(const CanonicalTensor& tensor);
// Digests of every tensor, computed on `threads` threads (0 = hardware concurrency).
std::vector<TensorDigest> canonical_digests(const CanonicalModel& model, unsigned threads = 0);
std::string model_digest(const std::vector<TensorDigest>& digests);

// Streams a canonical tensor's values as f32 (dense) or bytes (MXFP4) in bounded chunks.
void for_each_canonical_chunk(const CanonicalTensor& tensor, const std::function<void(std::span<const uint8_t>)>& sink);

// A dense tensor in whole rows (whole blocks for Q8_0): the stored encoding of each chunk, the
// same values decoded to f32, and the index of the chunk's first element, so a caller that needs
// both (Q8_0 block scales and values) reads the data once.
using DenseChunkSink = std::function<void(std::span<const uint8_t> encoded, std::span<const float> values,
                                          uint64_t first_element)>;
void for_each_dense_chunk(const CanonicalTensor& tensor, const DenseChunkSink& sink);

}  // namespace gptoss

#include "verify/canonical_digest.h"


#include "formats/codecs/float_codec.h"
#include "formats/core/mapped_file.h"
#include "formats/core/parallel_for.h"
#include "verify/sha256.h"

namespace gptoss {

void for_each_dense_chunk(const CanonicalTensor& t, const DenseChunkSink& sink) {
  const uint64_t row = t.spec.shape.back();
  const uint64_t row_bytes = *dtype_byte_size(t.dtype, row);
  const uint64_t rows = row_bytes ? t.source->size() / row_bytes : 0;
  const uint64_t rows_per_chunk = std::max<uint64_t>(1, (4u << 20) / (row * 4));
  std::vector<uint8_t> raw;
  std::vector<float> values;
  for (uint64_t r = 0; r < rows; r += rows_per_chunk) {
    const uint64_t n = std::min(rows_per_chunk, rows - r);
    raw.resize(n * row_bytes);
    t.source->read(r * row_bytes, raw);
    t.source->release_range(r * row_bytes, raw.size());
    values.resize(n * row);
    decode_to_f32(t.dtype, raw.data(), values.size(), values.data());
    sink(raw, values, r * row);
  }
  t.source->release_pages();
}

void for_each_canonical_chunk(const CanonicalTensor& t, const std::function<void(std::span<const uint8_t>)>& sink) {
  if (holds_mxfp4(t)) {
    stream_source(*t.source, sink, 8u << 20);
    return;
  }
  for_each_dense_chunk(t, [&](std::span<const uint8_t>, std::span<const float> values, uint64_t) {
    sink({reinterpret_cast<const uint8_t*>(values.data()), values.size() * 4});
  });
}

std::string canonical_tensor_digest(const CanonicalTensor& t) {
  Sha256 h;
  for_each_canonical_chunk(t, [&](std::span<const uint8_t> chunk) { h.update(chunk); });
  return h.finish_hex();
}

std::vector<TensorDigest> canonical_digests(const CanonicalModel& model, unsigned threads) {
  std::vector<TensorDigest> out(model.tensors.size());
  const uint64_t shrink_events = MappedFile::shrink_events();
  parallel_for(out.size(), threads, [&](size_t i) {
    out[i] = {model.tensors[i].spec.name, canonical_tensor_digest(model.tensors[i])};
  });
  MappedFile::throw_if_shrunk_since(shrink_events);  // digests of zeros read past a shrunk file's end are not digests
  return out;
}

std::string model_digest(const std::vector<TensorDigest>& digests) {
  Sha256 h;
  for (const auto& d : digests) {
    const std::string line = d.name + " " + d.sha256 + "\n";
    h.update({reinterpret_cast<const uint8_t*>(line.data()), line.size()});
  }
  return h.finish_hex();
}

}  // namespace gptoss

#pragma once
// Streaming model.bin writer. The constructor writes everything up to the dense weights (headers,
// tokenizer section, page padding); then write_tensors() writes every tensor, in the order
// ModelBinLayout::write_order() lists, at exactly the offset the layout gives (the zero padding
// before it, 16 bytes or 16 KiB, follows from the layout), through the ordered chunk pipeline
// (produced on every core, written in order). commit() checks that every tensor was written and
// renames the file into place: a failure never leaves a partial model.bin.
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "formats/core/atomic_file.h"
#include "formats/core/chunk_pipeline.h"
#include "formats/core/tensor_source.h"
#include "formats/modelbin/modelbin_format.h"

namespace gptoss::modelbin {

struct TokenizerSection {
  std::vector<Uuid> special_token_uuids;      // one per special token (all-zero = none)
  std::string regex;                          // written with a NUL; must not contain one
  std::vector<std::string_view> text_tokens;  // raw bytes by id; the caller keeps them alive
};

// The tokenizer header that `section` produces; throws std::invalid_argument when a token is
// longer than 65535 bytes, the regex holds a NUL or a size does not fit in 32 bits.
TokenizerHeader tokenizer_header_for(const TokenizerSection& section);

class ModelBinWriter {
 public:
  ModelBinWriter(const std::filesystem::path& path, const ModelHeader& header, const TokenizerSection& tokenizer);

  const ModelBinLayout& layout() const { return layout_; }

  // Writes every tensor: one source per entry of layout().write_order(), in that order, each of
  // the region's size (std::invalid_argument naming the tensor, before anything is written, when
  // not). Progress labels are the region names (e.g. "block 2 QKV bias").
  void write_tensors(const std::vector<TensorSourcePtr>& sources, const PipelineOptions& stream = {});

  void commit();

 private:
  AtomicFileWriter out_;
  ModelBinLayout layout_;
  std::vector<ModelBinLayout::NamedRegion> order_;
  bool written_ = false;
};

}  // namespace gptoss::modelbin

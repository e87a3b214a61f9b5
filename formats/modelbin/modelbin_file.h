#pragma once
// Validated read-only view of a model.bin. open() checks the magic, the three UUIDs, the
// tokenizer section (every token length against the section) and recomputes every weight offset
// from the header against the file size before anything is handed out, so later accesses are
// plain in-bounds slices of the mapping.
#include <filesystem>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "formats/core/mapped_file.h"
#include "formats/core/stored_tensor.h"
#include "formats/modelbin/modelbin_format.h"

namespace gptoss::modelbin {

class ModelBinFile {
 public:
  static ModelBinFile open(const std::filesystem::path& path);
  // Parses an already mapped (or in-memory) file. Throws FormatError naming field and offset.
  static ModelBinFile parse(std::shared_ptr<const MappedFile> file);

  const std::shared_ptr<const MappedFile>& mapped() const { return file_; }
  const std::string& path() const { return file_->path(); }
  const ModelHeader& header() const { return header_; }
  const TokenizerHeader& tokenizer_header() const { return tokenizer_; }
  const ModelBinLayout& layout() const { return layout_; }

  const std::vector<Uuid>& special_token_uuids() const { return special_uuids_; }  // one per special id
  std::string_view regex() const { return regex_; }                               // without its NUL
  const std::vector<std::string_view>& text_tokens() const { return text_tokens_; }  // raw bytes, by id

  // Bytes of a region of the layout (always in bounds after open()).
  std::span<const uint8_t> bytes(const Region& region) const { return file_->bytes().subspan(region.offset, region.size); }
  // The layout's regions as stored tensors ("block 2 expert 0 mlp1 blocks", ...), in write order.
  std::vector<StoredTensorRange> stored_tensors() const;

 private:
  std::shared_ptr<const MappedFile> file_;
  ModelHeader header_;
  TokenizerHeader tokenizer_;
  ModelBinLayout layout_;
  std::vector<Uuid> special_uuids_;
  std::string_view regex_;
  std::vector<std::string_view> text_tokens_;
};

}  // namespace gptoss::modelbin

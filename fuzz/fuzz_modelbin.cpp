// model.bin: ModelBinFile::parse on the input in memory (headers, UUIDs, tokenizer section,
// layout against the file size), then the canonical mapping with every tensor streamed.
#include "convert/modelbin/modelbin_model.h"
#include "formats/core/error.h"
#include "formats/modelbin/modelbin_file.h"
#include "fuzz/harness_support.h"

extern "C" int gptoss_fuzz_modelbin(const uint8_t* data, size_t size) {
  using namespace gptoss;
  std::shared_ptr<const modelbin::ModelBinFile> file;
  try {
    file = std::make_shared<const modelbin::ModelBinFile>(
        modelbin::ModelBinFile::parse(MappedFile::from_bytes({data, data + size}, "fuzz.bin")));
  } catch (const FormatError& e) {
    fuzz::note_rejected(e);
    return 0;
  }
  const auto& layout = file->layout();
  fuzz::require(layout.file_size <= size, "layout ends past the file");
  for (const auto& region : layout.write_order())
    fuzz::require(file->bytes(region.region).size() == region.region.size, "region view has the wrong size");
  fuzz::require(file->text_tokens().size() == file->tokenizer_header().num_text_tokens, "text token count mismatch");
  try {
    const CanonicalModel model = canonical_from_modelbin(file);
    fuzz::drain_model(model);
  } catch (const FormatError& e) {
    fuzz::note_rejected(e);
  }
  return 0;
}

// GGUF: GgufFile::parse on the input in memory (header, metadata, tensor infos, data views),
// the tokenizer keys, and when the container parses, the gpt-oss mapping (load_gguf_model reads
// a path, so the input is written to a scratch file first) with every tensor streamed.
#include "convert/gguf/gguf_model.h"
#include "convert/gguf/gguf_tokenizer.h"
#include "formats/core/error.h"
#include "formats/gguf/gguf_file.h"
#include "fuzz/harness_support.h"

namespace {
using namespace gptoss;

void check_container(const GgufFile& file) {
  for (const auto& kv : file.kvs()) fuzz::require(file.find(kv.key) != nullptr, "find() misses a parsed key");
  uint64_t previous_end = 0;
  for (const auto& t : file.tensors()) {
    fuzz::require(file.data(t).size() == t.size, "tensor view size differs from the tensor's size");
    fuzz::require(t.offset >= previous_end, "tensors overlap or are out of data order");
    previous_end = t.offset + t.size;
    fuzz::require(t.offset + t.size <= file.mapped()->size() - file.data_offset(), "tensor ends past the file");
  }
}
}  // namespace

extern "C" int gptoss_fuzz_gguf(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  try {
    const GgufFile file = GgufFile::parse(MappedFile::from_bytes(bytes, "fuzz.gguf"));
    check_container(file);
    try {
      (void)gguf_tokenizer(file);
    } catch (const FormatError& e) {
      fuzz::note_rejected(e);
    }
  } catch (const FormatError& e) {
    fuzz::note_rejected(e);
    return 0;  // not a GGUF container: the mapping never sees it
  }
  const auto path = fuzz::temp_dir() / "fuzz.gguf";
  fuzz::write_file(path, bytes);
  try {
    const CanonicalModel model = load_gguf_model(path);
    fuzz::drain_model(model);
  } catch (const FormatError& e) {
    fuzz::note_rejected(e);
  }
  return 0;
}

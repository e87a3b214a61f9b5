// Safetensors: SafetensorsFile::parse on the input, in memory. An input of the form
//   <model.safetensors.index.json bytes> "\n--SHARD--\n" <safetensors bytes>
// also goes through SafetensorsCheckpoint::open on a scratch folder holding the index and the
// shard as model-00001-of-00001.safetensors (the index reader exists only on disk).
#include <algorithm>
#include <string_view>

#include "formats/core/error.h"
#include "formats/safetensors/safetensors_checkpoint.h"
#include "formats/safetensors/safetensors_file.h"
#include "fuzz/harness_support.h"

namespace {
using namespace gptoss;
constexpr std::string_view kShardSeparator = "\n--SHARD--\n";

void check_file(const SafetensorsFile& file) {
  for (const auto& t : file.tensors()) {
    const auto bytes = file.data(t);
    fuzz::require(bytes.size() == t.size(), "tensor view size differs from its data_offsets");
    fuzz::require(file.find(t.name) == &t, "find() does not return the tensor by its name");
  }
}

void parse_in_memory(std::span<const uint8_t> bytes) {
  try {
    const auto file = SafetensorsFile::parse(MappedFile::from_bytes({bytes.begin(), bytes.end()}, "fuzz.safetensors"));
    check_file(file);
  } catch (const FormatError& e) {
    fuzz::note_rejected(e);
  }
}

void open_checkpoint(std::span<const uint8_t> index, std::span<const uint8_t> shard) {
  const auto& dir = fuzz::temp_dir();
  fuzz::write_file(dir / "model.safetensors.index.json", index);
  fuzz::write_file(dir / "model-00001-of-00001.safetensors", shard);
  try {
    const auto checkpoint = SafetensorsCheckpoint::open(dir);
    for (const auto& name : checkpoint.names()) {
      const auto& ref = checkpoint.get(name);
      fuzz::require(ref.file->data(*ref.tensor).size() == ref.tensor->size(), "checkpoint tensor view has the wrong size");
    }
  } catch (const FormatError& e) {
    fuzz::note_rejected(e);
  }
}
}  // namespace

extern "C" int gptoss_fuzz_safetensors_header(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> input(data, size);
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const size_t separator = text.find(kShardSeparator);
  if (separator == std::string_view::npos) {
    parse_in_memory(input);
    return 0;
  }
  const auto shard = input.subspan(separator + kShardSeparator.size());
  parse_in_memory(shard);
  open_checkpoint(input.first(separator), shard);
  return 0;
}

#pragma once
// SHA-256 of every stored tensor's bytes and of every whole file, computed in parallel, and the
// manifest format that lets a copy on another machine be checked:
//   sha256  <hex>  <file>            (a whole file, path relative to the manifest's base)
//   sha256  <hex>  <file>:<tensor>   (one tensor's bytes as stored in that file)
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace gptoss {

struct StoredItem {
  std::filesystem::path file;  // absolute
  std::string tensor;          // empty for the whole file
  uint64_t offset = 0;         // byte range of the tensor in the file
  uint64_t size = 0;
};

// Every file of a model (all shards) and every tensor stored in them.
std::vector<StoredItem> list_stored_items(const std::filesystem::path& model_path);

struct ItemChecksum {
  std::string label;  // "<file>" or "<file>:<tensor>", file relative to `base`
  std::string sha256;
};

// Hashes the items on `threads` threads; progress(done_bytes, total_bytes) may be called often.
std::vector<ItemChecksum> compute_checksums(const std::vector<StoredItem>& items, const std::filesystem::path& base,
                                            unsigned threads = 0,
                                            const std::function<void(uint64_t, uint64_t)>& progress = {});

std::string format_manifest(const std::vector<ItemChecksum>& sums);
// Parses a manifest; throws FormatError naming the line on malformed input.
std::vector<ItemChecksum> parse_manifest(const std::string& text, const std::string& source);

struct ManifestMismatch {
  std::string label;
  std::string expected, actual;  // actual empty when the item is missing
};
std::vector<ManifestMismatch> check_manifest(const std::vector<ItemChecksum>& expected,
                                             const std::vector<ItemChecksum>& actual);

}  // namespace gptoss

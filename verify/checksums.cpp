#include "verify/checksums.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <sstream>

#include "convert/model_io.h"
#include "convert/synth_spec.h"
#include "formats/core/error.h"
#include "formats/core/mapped_file.h"
#include "formats/core/parallel_for.h"
#include "verify/sha256.h"

namespace gptoss {
namespace fs = std::filesystem;

std::vector<StoredItem> list_stored_items(const fs::path& model_path) {
  if (is_synth_spec(model_path))
    throw std::invalid_argument(model_path.string() + " is generated as it is read: it has no files to checksum");
  std::vector<StoredItem> items;
  for (const auto& file : model_files(model_path)) {
    auto tensors = stored_tensors(file);  // first: a shard the index names but the folder lacks is a FormatError
    items.push_back({fs::absolute(file), "", 0, fs::file_size(file)});
    for (const auto& t : tensors) items.push_back({fs::absolute(file), t.name, t.offset, t.size});
  }
  return items;
}

std::vector<ItemChecksum> compute_checksums(const std::vector<StoredItem>& items, const fs::path& base, unsigned threads,
                                            const std::function<void(uint64_t, uint64_t)>& progress) {
  std::vector<ItemChecksum> out(items.size());
  uint64_t total = 0;
  for (const auto& i : items) total += i.size;
  std::map<fs::path, std::shared_ptr<const MappedFile>> maps;
  for (const auto& i : items)
    if (!maps.count(i.file)) maps[i.file] = MappedFile::open(i.file);
  std::atomic<uint64_t> done{0};
  std::mutex progress_mutex;
  // Largest first (the whole files, then the large tensors): the longest hashes start at once and
  // the small ones fill the other threads' gaps, so a model of one big file takes about as long
  // as hashing that file on one core.
  std::vector<size_t> order(items.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return items[a].size > items[b].size; });
  parallel_for(items.size(), threads, [&](size_t index) {
    const size_t k = order[index];
    const auto& item = items[k];
    const auto& map = maps.at(item.file);
    const auto bytes = map->slice(item.offset, item.size, item.tensor.empty() ? "file" : item.tensor);
    Sha256 h;
    constexpr size_t kChunk = 16u << 20;
    for (size_t off = 0; off < bytes.size(); off += kChunk) {
      const size_t n = std::min(kChunk, bytes.size() - off);
      // Pages fetched and mapped in one call before hashing, dropped from the process after it
      // (they stay in the page cache), so hashing a 60 GB model does not grow the resident set.
      map->will_need(bytes.subspan(off, n));
      h.update(bytes.subspan(off, n));
      map->release(bytes.subspan(off, n));
      const uint64_t now = done += n;
      if (progress) {
        std::lock_guard lock(progress_mutex);
        progress(now, total);
      }
    }
    map->check_intact();  // the hash read zeros past the file's new end
    std::string label = fs::relative(item.file, base).generic_string();
    if (!item.tensor.empty()) label += ":" + item.tensor;
    out[k] = {label, h.finish_hex()};
  });
  return out;
}

std::string format_manifest(const std::vector<ItemChecksum>& sums) {
  std::string out;
  for (const auto& s : sums) out += "sha256  " + s.sha256 + "  " + s.label + "\n";
  return out;
}

std::vector<ItemChecksum> parse_manifest(const std::string& text, const std::string& source) {
  std::vector<ItemChecksum> out;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    const std::string prefix = "sha256  ";
    const auto fail = [&](const std::string& why) {
      throw_format_error(source, "line " + std::to_string(number), std::nullopt, why);
    };
    if (line.rfind(prefix, 0) != 0) fail("must start with \"sha256  \"");
    if (line.size() < prefix.size() + 64 + 3) fail("too short for a sha256 line");
    const std::string hex = line.substr(prefix.size(), 64);
    if (hex.find_first_not_of("0123456789abcdef") != std::string::npos) fail("digest must be 64 lower-case hex digits");
    if (line.compare(prefix.size() + 64, 2, "  ") != 0) fail("two spaces must separate digest and name");
    out.push_back({line.substr(prefix.size() + 66), hex});
  }
  return out;
}

std::vector<ManifestMismatch> check_manifest(const std::vector<ItemChecksum>& expected,
                                             const std::vector<ItemChecksum>& actual) {
  std::map<std::string, std::string> have;
  for (const auto& a : actual) have[a.label] = a.sha256;
  std::vector<ManifestMismatch> out;
  for (const auto& e : expected) {
    auto it = have.find(e.label);
    if (it == have.end()) out.push_back({e.label, e.sha256, ""});
    else if (it->second != e.sha256) out.push_back({e.label, e.sha256, it->second});
  }
  return out;
}

}  // namespace gptoss

#include "fuzz/harness_support.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "formats/core/tensor_source.h"

#ifndef GPTOSS_FUZZ_CACHE_DIR
#define GPTOSS_FUZZ_CACHE_DIR ".cache"
#endif

namespace gptoss::fuzz {
namespace fs = std::filesystem;

namespace {
struct ScratchDir {
  fs::path path;
  ScratchDir() {
    std::error_code ec;
    const fs::path base = fs::is_directory("/dev/shm", ec) ? fs::path("/dev/shm") : fs::temp_directory_path();
    std::string templ = (base / "gptoss-fuzz-XXXXXX").string();
    if (!mkdtemp(templ.data())) {
      std::perror("gptoss fuzz: mkdtemp");
      std::abort();
    }
    path = templ;
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};
}  // namespace

const fs::path& temp_dir() {
  static ScratchDir dir;
  return dir.path;
}

void write_file(const fs::path& path, std::span<const uint8_t> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  require(static_cast<bool>(out), "cannot write the fuzz scratch file");
}

void note_rejected(const std::exception& error) {
  static const bool verbose = std::getenv("GPTOSS_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::fprintf(stderr, "rejected: %s\n", error.what());
}

void require(bool ok, std::string_view what) {
  if (ok) return;
  std::fprintf(stderr, "gptoss fuzz invariant broken: %.*s\n", static_cast<int>(what.size()), what.data());
  std::abort();
}

void drain_model(const CanonicalModel& model) {
  for (const auto& t : model.tensors) {
    require(t.source != nullptr, "canonical tensor without a source");
    uint64_t total = 0;
    stream_source(*t.source, [&](std::span<const uint8_t> chunk) { total += chunk.size(); }, 64 * 1024);
    require(total == t.source->size(), "tensor source yielded a different byte count than its size()");
  }
}

fs::path real_tokenizer_path() {
  if (const char* env = std::getenv("GPTOSS_FUZZ_TOKENIZER")) return env;
  const fs::path cached = fs::path(GPTOSS_FUZZ_CACHE_DIR) / "tokenizer.json";
  std::error_code ec;
  return fs::is_regular_file(cached, ec) ? cached : fs::path();
}

}  // namespace gptoss::fuzz

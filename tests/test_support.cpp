#include "tests/test_support.h"

#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <random>

#include "convert/safetensors_model.h"
#include "convert/synthesize.h"
#include "verify/sha256.h"

namespace gptoss::test {
namespace fs = std::filesystem;

std::optional<fs::path> goldens_dir() {
  const fs::path p = fs::path(GPTOSS_SHARED_DIR) / "goldens";
  if (fs::exists(p / "a" / "refs-a.json")) return fs::canonical(p);
  return std::nullopt;
}

std::optional<fs::path> tokenizer_json_path() {
  const fs::path p = fs::path(GPTOSS_CACHE_DIR) / "tokenizer.json";
  if (fs::exists(p)) return p;
  return std::nullopt;
}

fs::path tools_dir() { return GPTOSS_TOOLS_DIR; }

TempDir::TempDir() {
  std::random_device rd;
  path_ = fs::temp_directory_path() / ("gptoss-test-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
  fs::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

CommandResult run_command(const std::string& command) {
  std::string full = command + " 2>&1";
  FILE* pipe = ::popen(full.c_str(), "r");
  if (!pipe) return {-1, "popen failed"};
  std::string out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::vector<uint8_t> read_file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write_file_bytes(const fs::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::string file_sha256(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  Sha256 h;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    h.update({reinterpret_cast<const uint8_t*>(buf.data()), static_cast<size_t>(in.gcount())});
  }
  return h.finish_hex();
}

const fs::path& preset_a_checkpoint() {
  static TempDir dir;
  static std::once_flag once;
  std::call_once(once, [] {
    const auto model = synthesize_model(synth_preset("a"));
    SafetensorsWriteOptions hf;
    write_safetensors_model(model, dir / "hf", hf);
    SafetensorsWriteOptions orig;
    orig.layout = CheckpointLayout::Original;
    write_safetensors_model(model, dir / "original", orig);
    if (auto tok = tokenizer_json_path()) fs::copy_file(*tok, dir / "hf" / "tokenizer.json");
  });
  return dir.path();
}

}  // namespace gptoss::test

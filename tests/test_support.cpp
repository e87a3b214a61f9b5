#include "tests/test_support.h"

#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <stdexcept>

#include "convert/gguf/gguf_model.h"
#include "convert/model_io.h"
#include "convert/safetensors_model.h"
#include "convert/synthesize.h"
#include "verify/sha256.h"

namespace gptoss::test {
namespace fs = std::filesystem;

fs::path shared_dir() { return GPTOSS_SHARED_DIR; }

bool shared_dir_exists() { return fs::is_directory(shared_dir()); }

std::optional<fs::path> goldens_dir() {
  const fs::path p = shared_dir() / "goldens";
  if (fs::exists(p / "a" / "refs-a.json")) return fs::canonical(p);
  return std::nullopt;
}

fs::path cache_dir() { return GPTOSS_CACHE_DIR; }

std::optional<fs::path> tokenizer_json_path() {
  const fs::path p = cache_dir() / "tokenizer.json";
  if (fs::exists(p)) return p;
  return std::nullopt;
}

bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

fs::path tools_dir() { return GPTOSS_TOOLS_DIR; }
std::string tool_path(const std::string& name) { return (tools_dir() / name).string(); }

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

// One read of the whole file: tests read 50 MB models, which a byte-wise istreambuf_iterator
// copy takes seconds for under ASan.
std::vector<uint8_t> read_file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {};
  std::vector<uint8_t> bytes(static_cast<size_t>(in.tellg()));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  bytes.resize(static_cast<size_t>(in.gcount()));
  return bytes;
}

void write_file_bytes(const fs::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

void write_file_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
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

namespace {

// The folder the ctest fixture `fixture.preset_a` made, when this process runs under ctest.
std::optional<fs::path> preset_a_fixture_dir() {
  const char* dir = std::getenv("GPTOSS_PRESET_A_DIR");
  if (!dir || !*dir) return std::nullopt;
  if (!fs::exists(fs::path(dir) / "hf" / "model.safetensors") || !fs::exists(fs::path(dir) / "model.gguf"))
    throw std::runtime_error(std::string("GPTOSS_PRESET_A_DIR=") + dir + " holds no complete preset-a fixture");
  return fs::path(dir);
}

// A temp folder for what this process makes itself when it runs outside ctest.
const TempDir& own_fixture_dir() {
  static const TempDir dir;
  return dir;
}

}  // namespace

const fs::path& preset_a_checkpoint() {
  static const fs::path path = [] {
    if (auto dir = preset_a_fixture_dir()) return *dir;
    const fs::path dir = own_fixture_dir().path();
    const auto model = synthesize_model(synth_preset("a"));
    SafetensorsWriteOptions hf;
    write_safetensors_model(model, dir / "hf", hf);
    SafetensorsWriteOptions orig;
    orig.layout = CheckpointLayout::Original;
    write_safetensors_model(model, dir / "original", orig);
    if (auto tok = tokenizer_json_path()) fs::copy_file(*tok, dir / "hf" / "tokenizer.json");
    return dir;
  }();
  return path;
}

const fs::path& preset_a_bf16_gguf() {
  static const fs::path path = [] {
    if (auto dir = preset_a_fixture_dir()) return *dir / "model.gguf";
    const fs::path file = own_fixture_dir() / "preset-a-bf16.gguf";
    write_gguf_model(load_model(preset_a_checkpoint() / "hf"), file, GgufWriteOptions{});
    return file;
  }();
  return path;
}

}  // namespace gptoss::test

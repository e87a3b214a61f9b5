#include "tests/test_support.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <stdexcept>

#include "convert/gguf/gguf_model.h"
#include "convert/model_io.h"
#include "convert/safetensors_model.h"
#include "convert/synthesize.h"
#include "formats/codecs/float_codec.h"
#include "formats/codecs/mxfp4.h"
#include "formats/core/checked_math.h"
#include "formats/core/float16.h"
#include "formats/core/tensor_source.h"
#include "tests/random_blocks.h"
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

const fs::path& preset_a_q8_gguf() {
  // The goldens' llama.cpp Q8_0 GGUF holds exactly these Q8_0 tensors
  // (CpuGoldenParity.GoldenQ8_0GgufIsOurQ8_0OfTheCheckpoint) and gives the same logits; taking it
  // saves each test process a conversion of preset a.
  static const fs::path path = [] {
    if (const auto goldens = goldens_dir(); goldens && fs::exists(*goldens / "a" / "model-q8_0.gguf"))
      return *goldens / "a" / "model-q8_0.gguf";
    const fs::path file = own_fixture_dir() / "preset-a-q8_0.gguf";
    GgufWriteOptions options;
    options.dense_dtype = DType::Q8_0;
    write_gguf_model(load_model(preset_a_checkpoint() / "hf"), file, options);
    return file;
  }();
  return path;
}

fs::path data_dir() { return GPTOSS_DATA_DIR; }

fs::path quant_goldens_mixed_gguf() { return data_dir() / "quant-goldens" / "mixed.gguf"; }

namespace {
std::vector<uint8_t> float_bytes(const std::vector<float>& values) {
  std::vector<uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

// Every value of an expert matrix (either form), [E, rows, in].
std::vector<float> expert_values(const CanonicalModel& model, const CanonicalTensor& matrix) {
  const auto bytes = read_all(*matrix.source);
  if (!holds_mxfp4(matrix)) {
    std::vector<float> values(*checked_product(matrix.spec.shape));
    decode_to_f32(matrix.dtype, bytes.data(), values.size(), values.data());
    return values;
  }
  const TensorRole scales_role = expert_scales_role(matrix.spec.role);
  const auto scales = read_all(*model.get(scales_role, matrix.spec.layer).source);
  std::vector<float> values(scales.size() * 32);
  mxfp4::dequantize_oai(bytes.data(), scales.data(), scales.size(), values.data());
  return values;
}

// The two tensors of an expert matrix in the canonical form of types other than MXFP4.
void set_experts(CanonicalModel& model, int layer, TensorRole role, DType type, std::vector<uint8_t> bytes,
                 const std::string& origin) {
  const TensorRole scales_role = expert_scales_role(role);
  for (auto& t : model.tensors) {
    if (t.spec.layer != layer || (t.spec.role != role && t.spec.role != scales_role)) continue;
    t.spec.shape = canonical_shape(model.config, t.spec.role, type);
    t.dtype = t.spec.role == role ? type : DType::U8;
    t.source = owned_bytes(t.spec.role == role ? std::move(bytes) : std::vector<uint8_t>{});
    t.origin = origin;
  }
}
}  // namespace

CanonicalModel decoded_to_f32(const CanonicalModel& model) {
  CanonicalModel out = model;
  for (auto& t : out.tensors) {
    if (is_mxfp4_role(t.spec.role)) continue;  // the experts: below
    const auto bytes = read_all(*t.source);
    std::vector<float> values(*checked_product(t.spec.shape));
    decode_to_f32(t.dtype, bytes.data(), values.size(), values.data());
    t.dtype = DType::F32;
    t.source = owned_bytes(float_bytes(values));
    t.origin = "f32 twin of " + t.origin;
  }
  for (uint32_t l = 0; l < model.config.num_layers; ++l)
    for (TensorRole role : {TensorRole::Mlp1Blocks, TensorRole::Mlp2Blocks}) {
      const CanonicalTensor& matrix = model.get(role, static_cast<int>(l));
      set_experts(out, static_cast<int>(l), role, DType::F32, float_bytes(expert_values(model, matrix)),
                  "f32 twin of " + matrix.origin);
    }
  out.source_description = "F32 twin of " + model.source_description;
  finalize_canonical_tensors(out.config, out.tensors, out.source_description);
  return out;
}

std::vector<uint8_t> encode_for_tests(DType type, const std::vector<float>& values) {
  std::vector<uint8_t> bytes(*dtype_byte_size(type, values.size()));
  encode_from_f32(type, values.data(), values.size(), bytes.data());
  return bytes;
}

CanonicalModel with_experts_as(const CanonicalModel& model, int layer, TensorRole role, DType type) {
  CanonicalModel out = model;
  const CanonicalTensor& matrix = model.get(role, layer);
  set_experts(out, layer, role, type, encode_for_tests(type, expert_values(model, matrix)),
              std::string(dtype_name(type)) + " re-encoding of " + matrix.origin);
  finalize_canonical_tensors(out.config, out.tensors, out.source_description);
  return out;
}

namespace {
double rms(const std::vector<float>& values) {
  double sum = 0;
  for (float v : values) sum += static_cast<double>(v) * v;
  return std::sqrt(sum / static_cast<double>(values.size()));
}

// `values` in `type`: encoded where encode_from_f32 can, else random blocks (seeded by `seed`) at
// about the values' RMS (above it where f16's normal range ends).
std::vector<uint8_t> stand_in(DType type, const std::vector<float>& values, uint32_t seed) {
  if (is_encodable(type)) return encode_for_tests(type, values);
  const auto blocks = random_blocks(type, values.size(), seed);
  std::vector<float> decoded(values.size());
  decode_to_f32(type, blocks.data(), decoded.size(), decoded.data());
  const int shift = static_cast<int>(std::lround(std::log2(rms(values) / rms(decoded))));
  return shift == 0 ? blocks : random_blocks(type, values.size(), seed, shift);
}
}  // namespace

std::vector<DType> weight_types() {
  std::vector<DType> types;
  for (int i = 0; i < kDTypeCount; ++i) {
    const DTypeInfo& info = dtype_info(static_cast<DType>(i));
    if (info.ggml_type >= 0 && info.decode && info.type != DType::F64 && info.type != DType::MXFP4)
      types.push_back(info.type);
  }
  return types;
}

CanonicalModel small_model_in(DType type) {
  const SynthPreset preset{"rows-of-256", 2, 256, 256, 4, 1, 64, 4, 2, 512, 8, 33};
  CanonicalModel model = synthesize_model(preset);
  const std::string label = std::string(dtype_name(type));
  uint32_t seed = 0;
  for (auto& t : model.tensors) {
    if (!is_matrix_role(t.spec.role)) continue;
    const auto bytes = read_all(*t.source);
    std::vector<float> values(*checked_product(t.spec.shape));
    decode_to_f32(t.dtype, bytes.data(), values.size(), values.data());
    t.source = owned_bytes(stand_in(type, values, ++seed));
    t.dtype = type;
    t.origin = label + " stand-in for " + t.origin;
  }
  for (uint32_t l = 0; l < preset.layers; ++l)
    for (TensorRole role : {TensorRole::Mlp1Blocks, TensorRole::Mlp2Blocks}) {
      const CanonicalTensor& matrix = model.get(role, static_cast<int>(l));
      set_experts(model, static_cast<int>(l), role, type, stand_in(type, expert_values(model, matrix), ++seed),
                  label + " stand-in for " + matrix.origin);
    }
  model.source_description = "rows-of-256 model in " + label;
  finalize_canonical_tensors(model.config, model.tensors, model.source_description);
  return model;
}

}  // namespace gptoss::test

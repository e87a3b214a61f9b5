// transform_bench: the conversion transforms one at a time on one thread, in MB/s of output, with
// the input in memory and the output produced in the chunks the writers use (4 MiB) - what one
// core of the chunk pipeline achieves per transform. A measuring tool, not a test (timings never
// decide a test); docs/performance.md shows its use.
//
//   transform_bench [--mib N] [--seconds S] [FILTER]
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "convert/dtype_convert.h"
#include "convert/gguf/gguf_sources.h"
#include "convert/modelbin/modelbin_transforms.h"
#include "convert/synthesize.h"
#include "formats/core/float16.h"
#include "formats/core/tensor_source.h"
#include "verify/sha256.h"

namespace {
using namespace gptoss;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kChunk = 4u << 20;
constexpr uint64_t kRow = 2880;  // gpt-oss-20b hidden size: the dense rows' elements

// Deterministic input bytes (any pattern will do; BF16 values stay finite and ordinary).
std::vector<uint8_t> bf16_values(uint64_t elements) {
  std::vector<uint8_t> out(elements * 2);
  for (uint64_t i = 0; i < elements; ++i) {
    const float v = static_cast<float>(static_cast<int>(synth_byte(7, i)) - 128) / 64.0f;
    const uint16_t h = f32_to_bf16(v);
    out[2 * i] = static_cast<uint8_t>(h);
    out[2 * i + 1] = static_cast<uint8_t>(h >> 8);
  }
  return out;
}
std::vector<uint8_t> random_bytes(uint64_t n, uint64_t seed) {
  std::vector<uint8_t> out(n);
  for (uint64_t i = 0; i < n; ++i) out[i] = synth_byte(seed, i);
  return out;
}
std::vector<uint8_t> encoded(const std::vector<uint8_t>& bf16, DType to) {
  return read_all(*convert_dtype(owned_bytes(bf16), DType::BF16, to, kRow));
}

// MB/s of output: the source read in 4 MiB chunks, front to back, repeated for `seconds`.
double measure(const TensorSource& source, double seconds) {
  std::vector<uint8_t> buffer(kChunk);
  uint64_t bytes = 0;
  const auto start = Clock::now();
  double elapsed = 0;
  while (elapsed < seconds) {
    for (uint64_t off = 0; off < source.size(); off += kChunk) {
      const uint64_t n = std::min(kChunk, source.size() - off);
      if (auto view = source.contiguous()) std::memcpy(buffer.data(), view->data() + off, n);
      else source.read(off, std::span<uint8_t>(buffer.data(), n));
      bytes += n;
    }
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  }
  return static_cast<double>(bytes) / elapsed / 1e6;
}

struct Case {
  std::string name;
  std::function<TensorSourcePtr()> make;
};
}  // namespace

int main(int argc, char** argv) {
  uint64_t mib = 64;
  double seconds = 1.0;
  std::string filter;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--mib" && i + 1 < argc) mib = std::stoull(argv[++i]);
    else if (a == "--seconds" && i + 1 < argc) seconds = std::stod(argv[++i]);
    else filter = a;
  }
  const uint64_t elements = mib * (1u << 20) / 2 / kRow / 64 * 64 * kRow;  // whole heads of 64 rows of BF16
  const auto bf16 = bf16_values(elements);
  const auto f32 = encoded(bf16, DType::F32);
  const auto q8 = encoded(bf16, DType::Q8_0);
  // MXFP4: OpenAI blocks + scales of mlp1-shaped rows (90 blocks per row), and the ggml rows.
  const uint64_t bpr = kRow / 32, blocks = elements / 32;
  const auto oai_blocks = random_bytes(blocks * 16, 1);
  auto oai_scales = random_bytes(blocks, 2);
  for (auto& s : oai_scales) s = static_cast<uint8_t>(122 + s % 8);  // E8M0 scales as trained models have
  const auto ggml = read_all(*make_ggml_mxfp4_rows(owned_bytes(oai_blocks), owned_bytes(oai_scales), bpr, 1, 0));
  auto stats = std::make_shared<ConversionStats>();
  auto counter = std::make_shared<std::atomic<uint64_t>>(0);
  const CanonicalModel synth = synthesize_model(synth_preset("20b"));

  const std::vector<Case> cases = {
      {"memcpy (reference)", [&] { return owned_bytes(bf16); }},
      {"BF16 -> Q8_0 (with error stats)", [&] { return convert_dtype(owned_bytes(bf16), DType::BF16, DType::Q8_0, kRow, stats); }},
      {"BF16 -> F32", [&] { return convert_dtype(owned_bytes(bf16), DType::BF16, DType::F32, kRow, stats); }},
      {"BF16 -> F16 (with error stats)", [&] { return convert_dtype(owned_bytes(bf16), DType::BF16, DType::F16, kRow, stats); }},
      {"F32 -> BF16 (with error stats)", [&] { return convert_dtype(owned_bytes(f32), DType::F32, DType::BF16, kRow, stats); }},
      {"Q8_0 -> BF16 (with error stats)", [&] { return convert_dtype(owned_bytes(q8), DType::Q8_0, DType::BF16, kRow, stats); }},
      {"MXFP4 OpenAI -> ggml (gate rows, stride 2)",
       [&] { return make_ggml_mxfp4_rows(owned_bytes(oai_blocks), owned_bytes(oai_scales), bpr, 2, 0); }},
      {"MXFP4 OpenAI -> ggml (down rows)",
       [&] { return make_ggml_mxfp4_rows(owned_bytes(oai_blocks), owned_bytes(oai_scales), bpr, 1, 0); }},
      {"MXFP4 ggml -> OpenAI blocks", [&] { return make_oai_blocks_from_ggml(owned_bytes(ggml), bpr); }},
      {"model.bin Q rows: RoPE interleave + x0.5",
       [&] { return make_qk_transform(owned_bytes(bf16), elements / kRow, kRow * 2, 64, QkDirection::ToModelBin, 0.5f, counter); }},
      {"model.bin scales + 14",
       [&] { return make_scale_offset(owned_bytes(oai_scales), 14, "bench", "scales", std::nullopt); }},
      {"gptoss-synth: BF16 tensor",
       [&] { return std::make_shared<SliceSource>(synth.get(TensorRole::Embedding).source, 0, bf16.size()); }},
      {"gptoss-synth: MXFP4 blocks",
       [&] { return std::make_shared<SliceSource>(synth.get(TensorRole::Mlp1Blocks, 0).source, 0, bf16.size()); }},
  };
  std::printf("| transform (one thread, %llu MiB in memory, 4 MiB chunks) | MB/s of output |\n|---|---:|\n",
              static_cast<unsigned long long>(mib));
  for (const auto& c : cases) {
    if (!filter.empty() && c.name.find(filter) == std::string::npos) continue;
    const auto source = c.make();
    std::printf("| %s | %.0f |\n", c.name.c_str(), measure(*source, seconds));
    std::fflush(stdout);
  }
  if (filter.empty() || std::string("SHA-256").find(filter) != std::string::npos) {
    // SHA-256 of one stream (OpenSSL EVP; SHA-NI where the CPU has it): the ceiling of a whole-file hash.
    uint64_t bytes = 0;
    const auto start = Clock::now();
    double elapsed = 0;
    while (elapsed < seconds) {
      Sha256 h;
      h.update(bf16);
      h.finish();
      bytes += bf16.size();
      elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    }
    std::printf("| SHA-256 of one stream (MB/s hashed) | %.0f |\n", static_cast<double>(bytes) / elapsed / 1e6);
  }
  return 0;
}

#pragma once
// Shared helpers for the test binaries: where shared/ and the set-up cache are, temp folders,
// and running the CLIs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "convert/canonical_model.h"

namespace gptoss::test {

// ../shared/goldens when it holds the goldens; tests that need them call GOLDENS_OR_SKIP().
std::optional<std::filesystem::path> goldens_dir();
// ../shared itself. When it exists (CI always has it) missing goldens are a failure, not a skip:
// a broken path must not turn the conformance tests into silent skips.
std::filesystem::path shared_dir();
bool shared_dir_exists();
// The real o200k_harmony tokenizer.json fetched by scripts/setup.sh, when present.
std::optional<std::filesystem::path> tokenizer_json_path();
// The set-up cache (.cache/ of the source tree) it is fetched into.
std::filesystem::path cache_dir();
// CI=true in the environment. CI runs scripts/test.sh, whose scripts/setup.sh fetches the
// tokenizer into .cache/, so there a missing tokenizer is a failure, not a skip (TOKENIZER_OR_SKIP).
bool in_ci();
std::filesystem::path tools_dir();
// The built tool `name` (gptoss-convert ...), as a command line's first word.
std::string tool_path(const std::string& name);

// The larger of a running worst error and `error`, and NaN from the first NaN on: std::max(worst,
// NaN) keeps `worst`, so a kernel that wrote NaN would pass a bound on the largest difference.
inline double worse(double worst, double error) { return std::isnan(worst) || error <= worst ? worst : error; }

// A fresh empty folder under the system temp dir, removed at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

struct CommandResult {
  int exit_code;
  std::string output;  // stdout and stderr together
};
CommandResult run_command(const std::string& command);

std::vector<uint8_t> read_file_bytes(const std::filesystem::path& path);
void write_file_bytes(const std::filesystem::path& path, const std::vector<uint8_t>& bytes);
void write_file_text(const std::filesystem::path& path, const std::string& text);  // as is, no newline added
std::string file_sha256(const std::filesystem::path& path);

// Preset a's checkpoint: hf/ (with the cached tokenizer.json, when there is one) and original/.
// Under ctest the fixture test `fixture.preset_a_make` makes it once per ctest run in the build
// tree (tests/preset_a_fixture.cmake), `fixture.preset_a_check` checks at the end that no test
// changed it, and every test that requires the fixture finds the folder in GPTOSS_PRESET_A_DIR; a
// test binary run by hand synthesizes it once per process in a temp folder.
const std::filesystem::path& preset_a_checkpoint();
// Preset a's hf/ as a GGUF with BF16 dense tensors (what `gptoss-convert hf/ model.gguf --dense
// bf16` writes): made by the same fixture, or once per process by hand.
const std::filesystem::path& preset_a_bf16_gguf();
// preset_a_checkpoint()/hf as a Q8_0 GGUF: the goldens' one where they are present, else written
// once per test process.
const std::filesystem::path& preset_a_q8_gguf();

// The repository's data/ folder (small committed test data with the scripts that made them).
std::filesystem::path data_dir();
// data/quant-goldens/mixed.gguf: a 4-layer gpt-oss whose dense tensors are in every type
// llama-quantize writes (data/quant-goldens/README.md).
std::filesystem::path quant_goldens_mixed_gguf();

// `model` with every tensor decoded to F32: dense tensors, and the experts as F32 matrices [E,
// rows, in] with empty scales (canonical_model.h). The same values in the plainest encoding: what an
// engine's result on `model` must equal.
CanonicalModel decoded_to_f32(const CanonicalModel& model);

// `values` encoded as `type` (encode_from_f32: one of the encodable types, the block types by
// ggml's reference quantizers).
std::vector<uint8_t> encode_for_tests(DType type, const std::vector<float>& values);

// `model` with the expert matrix `role` (Mlp1Blocks or Mlp2Blocks) of `layer` decoded and encoded
// again as `type` (encode_for_tests), in the canonical form of experts other than MXFP4.
CanonicalModel with_experts_as(const CanonicalModel& model, int layer, TensorRole role, DType type);

// A small gpt-oss (2 layers, rows of 256 values so that every block type's rows are whole blocks,
// 4 experts, a vocabulary of 512) whose every matrix is in `type`: the embedding, the attention
// projections, the router, the experts and the unembedding. Where encode_from_f32 encodes `type`
// (F32, F16, BF16, Q8_0, Q4_0 .. Q5_1, Q4_K .. Q6_K) they are the synthesized values encoded as
// llama-quantize would; the other block types (the IQ types, Q2_K, Q3_K) have no quantizer here,
// so they are random blocks (tests/random_blocks.h) at the synthesized tensor's RMS. Norms, biases
// and sinks stay as synthesized.
CanonicalModel small_model_in(DType type);

// The types a GGUF's weights come in that both engines read, from the DType table: F32, F16, BF16
// and every ggml block quantization with a decoder (Q8_0, Q4_0 .. IQ1_M); not MXFP4, which is the
// experts' own pair, nor F64.
std::vector<DType> weight_types();

}  // namespace gptoss::test

#define GOLDENS_OR_SKIP()                                                                          \
  const auto goldens = ::gptoss::test::goldens_dir();                                              \
  if (!goldens) {                                                                                  \
    if (::gptoss::test::shared_dir_exists())                                                       \
      FAIL() << ::gptoss::test::shared_dir().string() << " exists but holds no goldens/a/refs-a.json"; \
    GTEST_SKIP() << "../shared/goldens is absent: conformance against the goldens "               \
                    "needs it beside the repository";                                              \
  }
#define TOKENIZER_OR_SKIP()                                                                      \
  const auto tokenizer_json = ::gptoss::test::tokenizer_json_path();                             \
  if (!tokenizer_json) {                                                                         \
    if (::gptoss::test::in_ci())                                                                 \
      FAIL() << "CI=true but " << (::gptoss::test::cache_dir() / "tokenizer.json").string()     \
             << " is missing: scripts/setup.sh fetches it in CI, and CI must not skip what needs it"; \
    GTEST_SKIP() << "tokenizer.json is not cached: run scripts/setup.sh";                        \
  }

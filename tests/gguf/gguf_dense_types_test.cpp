// `--dense f16` and `--dense f32` GGUF output: the type of every tensor, the values (lossless from
// the BF16 checkpoint; from the golden Q8_0 file exact in F32 and rounded to nearest-even in F16),
// and reading the files back.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>

#include "convert/dtype_convert.h"
#include "convert/gguf/gguf_model.h"
#include "convert/synthesize.h"
#include "formats/core/float16.h"
#include "formats/gguf/gguf_file.h"
#include "tests/test_support.h"

namespace gptoss::test {
namespace {

// A dense tensor's values as f32 (exactly: every encoding here decodes exactly to f32).
std::vector<float> values(const CanonicalTensor& t) {
  const auto bytes = read_all(*convert_dtype(t.source, t.dtype, DType::F32, t.spec.shape.back()));
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

// The GGUF type llama.cpp's converter gives each tensor for a dense type: the 2-D weights other
// than the router in that type, experts MXFP4, everything else F32.
uint32_t expected_ggml_type(const std::string& name, uint32_t dense) {
  if (name.find("_exps.weight") != std::string::npos) return 39;
  for (const char* matrix : {"token_embd.weight", "output.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight",
                             "attn_output.weight"})
    if (name == matrix || name.ends_with(std::string(".") + matrix)) return dense;
  return 0;
}

struct DenseCase {
  const char* name;
  DType dtype;
  uint32_t ggml_type;
  uint32_t file_type;  // general.file_type: ALL_F32 = 0, MOSTLY_F16 = 1
};

class GgufDenseTypes : public ::testing::TestWithParam<DenseCase> {};

TEST_P(GgufDenseTypes, FromTheBf16CheckpointEveryValueIsKept) {
  const DenseCase& c = GetParam();
  TempDir tmp;
  // The preset-a checkpoint's tensors, synthesized (no tokenizer: the tokenizer keys are not what
  // this test is about, and parsing 27 MB of tokenizer.json would triple its time).
  const CanonicalModel hf = synthesize_model(synth_preset("a"));
  GgufWriteOptions options;
  options.dense_dtype = c.dtype;
  // Preset a's values are small integers times powers of two: exact in F16 as in F32, so the
  // only note is the missing tokenizer's.
  const auto notes = write_gguf_model(hf, tmp / "a.gguf", options);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("no tokenizer"), std::string::npos) << notes[0];

  const GgufFile file = GgufFile::open(tmp / "a.gguf");
  EXPECT_EQ(file.require("general.file_type", GgufType::U32).bits, c.file_type);
  size_t dense_count = 0;
  for (const auto& t : file.tensors()) {
    EXPECT_EQ(t.ggml_type, expected_ggml_type(t.name, c.ggml_type)) << t.name;
    dense_count += t.ggml_type == c.ggml_type && c.ggml_type != 0;
  }
  if (c.ggml_type != 0) {
    EXPECT_EQ(dense_count, 2u + 4u * 4u);  // embeddings + q, k, v, o of 4 layers
  }

  // Read back: dense matrices in the chosen type, same values as the checkpoint's BF16.
  const CanonicalModel back = load_gguf_model(tmp / "a.gguf");
  for (const auto& t : back.tensors) {
    SCOPED_TRACE(t.spec.name);
    const CanonicalTensor& source = hf.get(t.spec.role, t.spec.layer);
    if (is_mxfp4_role(t.spec.role)) {
      EXPECT_EQ(read_all(*t.source), read_all(*source.source));
      continue;
    }
    const bool matrix = is_matrix_role(t.spec.role) && t.spec.role != TensorRole::RouterWeight;
    EXPECT_EQ(t.dtype, matrix ? c.dtype : DType::F32);
    EXPECT_EQ(values(t), values(source));
  }
}

TEST_P(GgufDenseTypes, FromQ8_0ValuesAreExactInF32AndRoundedInF16) {
  GOLDENS_OR_SKIP();
  const DenseCase& c = GetParam();
  TempDir tmp;
  CanonicalModel golden = load_gguf_model(*goldens / "a" / "model-q8_0.gguf");
  golden.tokenizer.reset();  // not what this test is about; writing it back would double the time
  GgufWriteOptions options;
  options.dense_dtype = c.dtype;
  auto notes = write_gguf_model(golden, tmp / "a.gguf", options);
  ASSERT_FALSE(notes.empty());
  EXPECT_NE(notes[0].find("no tokenizer"), std::string::npos) << notes[0];
  notes.erase(notes.begin());
  const CanonicalModel back = load_gguf_model(tmp / "a.gguf");
  uint64_t rounded = 0;
  for (const auto& t : back.tensors) {
    if (is_mxfp4_role(t.spec.role)) continue;
    SCOPED_TRACE(t.spec.name);
    const std::vector<float> want = values(golden.get(t.spec.role, t.spec.layer));
    const std::vector<float> got = values(t);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      // F16: the nearest F16 (ties to even) of the exact Q8_0 value; F32: the value itself.
      const float expected = c.dtype == DType::F16 ? f16_to_f32(f32_to_f16(want[i])) : want[i];
      ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(expected)) << "element " << i;
      rounded += got[i] != want[i];
    }
  }
  if (c.dtype == DType::F32) {
    EXPECT_TRUE(notes.empty());  // Q8_0 -> F32 is exact and says nothing
    EXPECT_EQ(rounded, 0u);
  } else {
    // Q8_0 values d * q need up to 11 + 7 significant bits, more than F16's 11: some round, and
    // the notes say which tensors changed.
    EXPECT_GT(rounded, 0u);
    ASSERT_FALSE(notes.empty());
    for (const auto& n : notes) EXPECT_NE(n.find("Q8_0 -> F16 changed"), std::string::npos) << n;
  }
}

INSTANTIATE_TEST_SUITE_P(Types, GgufDenseTypes,
                         ::testing::Values(DenseCase{"F16", DType::F16, 1, 1}, DenseCase{"F32", DType::F32, 0, 0}),
                         [](const auto& test_param) { return std::string(test_param.param.name); });

}  // namespace
}  // namespace gptoss::test

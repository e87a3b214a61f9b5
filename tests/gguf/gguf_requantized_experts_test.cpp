// A GGUF whose experts are not MXFP4 (Q8_0 or Q4_1, as some fine-tunes ship them) converted to
// safetensors (HF and original/ layouts), which hold experts only as the MXFP4 pair: those experts are requantized by
// ggml's MXFP4 rule, the notes name each one with its measured error, the MXFP4 experts stay the
// same bytes, and gptoss-verify --same calls the requantized ones lossy as declared.
#include <gtest/gtest.h>

#include <cmath>

#include "convert/gguf/gguf_model.h"
#include "convert/model_io.h"
#include "convert/safetensors_model.h"
#include "convert/synthesize.h"
#include "formats/codecs/float_codec.h"
#include "formats/codecs/mxfp4.h"
#include "formats/core/checked_math.h"
#include "tests/test_support.h"
#include "verify/equivalence.h"

namespace gptoss {
namespace {
namespace fs = std::filesystem;

// Preset a (vocabulary cut to 1000) with layer 1's experts in Q8_0 and layer 2's mlp2 in Q4_1,
// written as a GGUF and read back: the other experts are MXFP4 in the file.
CanonicalModel gguf_with_quantized_experts(const fs::path& path) {
  SynthPreset p = synth_preset("a");
  p.vocab = 1000;
  CanonicalModel model = synthesize_model(p);
  model = test::with_experts_as(model, 1, TensorRole::Mlp1Blocks, DType::Q8_0);
  model = test::with_experts_as(model, 1, TensorRole::Mlp2Blocks, DType::Q8_0);
  model = test::with_experts_as(model, 2, TensorRole::Mlp2Blocks, DType::Q4_1);
  write_gguf_model(model, path, {});
  return load_gguf_model(path);
}

bool requantized(const CanonicalTensor& t) {
  return t.spec.layer == 1 || (t.spec.layer == 2 && (t.spec.role == TensorRole::Mlp2Blocks || t.spec.role == TensorRole::Mlp2Scales));
}

std::vector<float> decoded(const CanonicalTensor& matrix) {
  const auto bytes = read_all(*matrix.source);
  std::vector<float> values(*checked_product(matrix.spec.shape));
  decode_to_f32(matrix.dtype, bytes.data(), values.size(), values.data());
  return values;
}

TEST(GgufRequantizedExperts, HfOutputHoldsGgmlsMxfp4OfThemAndDeclaresTheLoss) {
  test::TempDir dir;
  const CanonicalModel gguf = gguf_with_quantized_experts(dir / "experts.gguf");
  ASSERT_EQ(gguf.get(TensorRole::Mlp1Blocks, 1).dtype, DType::Q8_0);
  ASSERT_EQ(gguf.get(TensorRole::Mlp2Blocks, 2).dtype, DType::Q4_1);
  const auto notes = write_model(gguf, dir / "hf", {});
  const CanonicalModel hf = load_safetensors_model(dir / "hf");

  // One note per requantized matrix, naming it and both types; none for the others.
  std::vector<std::string> requantized_notes;
  for (const auto& n : notes)
    if (n.find("-> MXFP4") != std::string::npos) requantized_notes.push_back(n);
  ASSERT_EQ(requantized_notes.size(), 3u) << ::testing::PrintToString(notes);
  EXPECT_EQ(requantized_notes[0].rfind("layers.1.mlp1.blocks: Q8_0 -> MXFP4 changed ", 0), 0u) << requantized_notes[0];
  EXPECT_EQ(requantized_notes[1].rfind("layers.1.mlp2.blocks: Q8_0 -> MXFP4 changed ", 0), 0u) << requantized_notes[1];
  EXPECT_EQ(requantized_notes[2].rfind("layers.2.mlp2.blocks: Q4_1 -> MXFP4 changed ", 0), 0u) << requantized_notes[2];

  for (const auto& t : hf.tensors) {
    if (!is_expert_matrix_role(t.spec.role)) continue;
    const CanonicalTensor& source = *gguf.find(t.spec.name);
    const CanonicalTensor& scales = hf.get(expert_scales_role(t.spec.role), t.spec.layer);
    ASSERT_TRUE(holds_mxfp4(t)) << t.spec.name;
    if (!requantized(t)) {  // MXFP4 in the GGUF: the same pair, byte for byte
      EXPECT_EQ(read_all(*t.source), read_all(*source.source)) << t.spec.name;
      EXPECT_EQ(read_all(*scales.source), read_all(*gguf.find(scales.spec.name)->source)) << scales.spec.name;
      continue;
    }
    // The bytes ggml's quantizer makes of the GGUF's decoded values, and each value within half a
    // step of its block's grid (mxfp4_quantize_test.cpp), or clipped above 12 steps.
    const auto values = decoded(source);
    const size_t blocks = values.size() / 32;
    std::vector<uint8_t> want_blocks(blocks * kMxfp4OaiBlockBytes), want_scales(blocks);
    mxfp4::quantize_oai(values.data(), blocks, want_blocks.data(), want_scales.data());
    const auto got_blocks = read_all(*t.source), got_scales = read_all(*scales.source);
    EXPECT_EQ(got_blocks, want_blocks) << t.spec.name;
    EXPECT_EQ(got_scales, want_scales) << scales.spec.name;
    std::vector<float> back(values.size());
    mxfp4::dequantize_oai(got_blocks.data(), got_scales.data(), blocks, back.data());
    size_t changed = 0;
    for (size_t i = 0; i < values.size(); ++i) {
      const double d = std::ldexp(1.0, got_scales[i / 32] - 128);
      const double x = std::fabs(static_cast<double>(values[i])), error = std::fabs(static_cast<double>(back[i]) - values[i]);
      ASSERT_LE(error, x > 12 * d ? x - 12 * d : x <= 4 * d ? d / 2 : x <= 8 * d ? d : 2 * d) << t.spec.name << " element " << i;
      changed += back[i] != values[i];
    }
    EXPECT_GT(changed, 0u) << t.spec.name;
  }

  // The original/ layout holds the same pairs under its own names.
  WriteOptions original;
  original.layout = CheckpointLayout::Original;
  EXPECT_EQ(write_model(gguf, dir / "original", original), notes);
  const CanonicalModel from_original = load_safetensors_model(dir / "original");
  for (const auto& t : hf.tensors) {
    if (is_mxfp4_role(t.spec.role)) {
      EXPECT_EQ(read_all(*from_original.find(t.spec.name)->source), read_all(*t.source)) << t.spec.name;
    }
  }

  // --same: the requantized matrices are lossy as declared (their scales with them), the rest the
  // same values.
  const ModelComparison c = compare_models(gguf, hf, 2);
  EXPECT_FALSE(c.any_different()) << c.to_table();
  size_t lossy = 0;
  for (const auto& r : c.tensors) {
    const CanonicalTensor& t = *gguf.find(r.name);
    if (!is_mxfp4_role(t.spec.role) || !requantized(t)) {
      EXPECT_NE(r.verdict, Verdict::LossyAsDeclared) << r.name << ": " << r.detail;
      continue;
    }
    ++lossy;
    EXPECT_EQ(r.verdict, Verdict::LossyAsDeclared) << r.name << ": " << r.detail;
    if (is_expert_matrix_role(t.spec.role)) {
      EXPECT_EQ(r.dtype_a, dtype_name(t.dtype)) << r.name;
      EXPECT_EQ(r.dtype_b, "MXFP4") << r.name;
      EXPECT_GT(r.max_abs_error, 0) << r.name;
    } else {
      EXPECT_NE(r.detail.find("compared as values with"), std::string::npos) << r.detail;
    }
  }
  EXPECT_EQ(lossy, 6u);  // three matrices and their scales
}

// Experts in a 256-element type (Q4_K, rows of 256): the same requantization, declared per matrix;
// Q4_K has no per-element bound, so --same holds them to the relative RMS error Q4_K allows.
TEST(GgufRequantizedExperts, Q4_KExpertsToHfAreRequantizedAndDeclared) {
  test::TempDir dir;
  write_gguf_model(test::small_model_in(DType::Q4_K), dir / "q4_k.gguf", {});
  const CanonicalModel gguf = load_gguf_model(dir / "q4_k.gguf");
  ASSERT_EQ(gguf.get(TensorRole::Mlp2Blocks, 0).dtype, DType::Q4_K);
  const auto notes = write_model(gguf, dir / "hf", {});
  size_t declared = 0;
  for (const auto& n : notes) declared += n.find(".blocks: Q4_K -> MXFP4 changed ") != std::string::npos;
  EXPECT_EQ(declared, 4u) << ::testing::PrintToString(notes);  // two layers, mlp1 and mlp2
  const ModelComparison c = compare_models(gguf, load_safetensors_model(dir / "hf"), 2);
  EXPECT_FALSE(c.any_different()) << c.to_table();
  size_t lossy = 0;
  for (const auto& r : c.tensors) {
    if (r.name.find(".blocks") == std::string::npos) continue;
    ++lossy;
    EXPECT_EQ(r.verdict, Verdict::LossyAsDeclared) << r.name;
    EXPECT_NE(r.detail.find("Q4_K vs MXFP4: relative RMS error"), std::string::npos) << r.detail;
  }
  EXPECT_EQ(lossy, 4u);
}

// The declared bound is what --same holds the requantized experts to: an element of an MXFP4
// block moved from a level of at most 2 steps to the top one (12 steps) is a difference, not a loss.
TEST(GgufRequantizedExperts, SameFindsAnExpertValueBeyondMxfp4Rounding) {
  test::TempDir dir;
  const CanonicalModel gguf = gguf_with_quantized_experts(dir / "experts.gguf");
  std::vector<LossyStep> lossy;
  CanonicalModel paired = with_mxfp4_experts(gguf, lossy);
  for (auto& t : paired.tensors) {
    if (t.spec.role != TensorRole::Mlp2Blocks || t.spec.layer != 1) continue;
    auto bytes = read_all(*t.source);
    // The first even element (a low nibble) of level 2 or less, to the top level of its sign.
    size_t i = 0;
    while ((bytes[i] & 0x7) > 2) ++i;
    bytes[i] = static_cast<uint8_t>((bytes[i] & 0xF8) | 0x7);
    t.source = owned_bytes(std::move(bytes));
  }
  const ModelComparison c = compare_models(gguf, paired, 2);
  EXPECT_TRUE(c.any_different());
  const TensorComparison* r = nullptr;
  for (const auto& t : c.tensors)
    if (t.name == "layers.1.mlp2.blocks") r = &t;
  ASSERT_TRUE(r);
  EXPECT_EQ(r->verdict, Verdict::Different) << r->detail;
  EXPECT_NE(r->detail.find("Q8_0 vs MXFP4 rounding allows"), std::string::npos) << r->detail;
}

}  // namespace
}  // namespace gptoss

// What model.bin cannot hold is refused with a clear error and no output file; what it can hold
// but only after a change (F32 dense tensors, experts in another type than MXFP4) is converted and
// reported.
#include <gtest/gtest.h>

#include "convert/gguf/gguf_model.h"
#include "convert/modelbin/modelbin_model.h"
#include "convert/modelbin/modelbin_tokenizer.h"
#include "convert/synthesize.h"
#include "formats/core/error.h"
#include "formats/core/float16.h"
#include "formats/core/mapped_file.h"
#include "tests/test_support.h"
#include "verify/equivalence.h"

namespace gptoss::test {
namespace {
namespace fs = std::filesystem;

// An o200k-shaped tokenizer without the real vocabulary: 199998 distinct byte tokens.
std::shared_ptr<TokenizerData> fake_o200k_tokenizer() {
  auto tok = std::make_shared<TokenizerData>();
  for (uint32_t id = 0; id < kModelBinTextTokens; ++id) {
    tok->tokens.push_back("t" + std::to_string(id));
    tok->types.push_back(TokenType::Normal);
  }
  return tok;
}

CanonicalModel preset_a_with_fake_tokenizer() {
  auto model = synthesize_model(synth_preset("a"));
  model.tokenizer = fake_o200k_tokenizer();
  return model;
}

// Runs the writer, expects it to throw an exception whose text contains `needle`, and checks
// that no output (nor a temp file) is left behind.
void expect_refusal(const CanonicalModel& model, const std::string& needle) {
  TempDir out;
  try {
    write_modelbin_model(model, out / "model.bin", {});
    ADD_FAILURE() << "writer accepted the model; expected an error containing: " << needle;
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_empty(out.path())) << "the refused write left a file behind";
}

CanonicalTensor& tensor(CanonicalModel& model, TensorRole role, int layer) {
  for (auto& t : model.tensors)
    if (t.spec.role == role && t.spec.layer == layer) return t;
  throw std::logic_error("no such tensor");
}

TEST(ModelBinRefusal, HeadDimOtherThan64) {
  CanonicalModel model;
  model.config = synth_config(synth_preset("a"));
  model.config.head_dim = 32;  // a small hand-made config: refused before any tensor is read
  expect_refusal(model, "model.bin cannot hold head_dim 32");
}

TEST(ModelBinRefusal, ExpertsPerTokenOtherThan4) {
  CanonicalModel model;
  model.config = synth_config(synth_preset("a"));
  model.config.experts_per_token = 2;
  expect_refusal(model, "experts_per_token 2");
}

TEST(ModelBinRefusal, AttentionPatternOtherThanEvenLayersSliding) {
  CanonicalModel model;
  model.config = synth_config(synth_preset("a"));
  model.config.sliding_layers[1] = true;
  expect_refusal(model, "layer 1 is sliding");
}

TEST(ModelBinRefusal, NoTokenizer) {
  auto model = synthesize_model(synth_preset("a"));
  model.tokenizer = nullptr;
  expect_refusal(model, "put the o200k_harmony tokenizer.json beside the checkpoint");
}

TEST(ModelBinRefusal, VocabularySmallerThanTheFormatHolds) {
  CanonicalModel model;
  model.config = synth_config(synth_preset("a"));
  model.config.vocab_size = 1000;
  model.tokenizer = fake_o200k_tokenizer();
  expect_refusal(model, "the model has only 1000");
}

TEST(ModelBinRefusal, TokenizerSmallerThanO200k) {
  auto model = preset_a_with_fake_tokenizer();
  auto tok = fake_o200k_tokenizer();
  tok->tokens.resize(5000);
  tok->types.resize(5000);
  model.tokenizer = tok;
  expect_refusal(model, "this tokenizer has only 5000 tokens");
}

TEST(ModelBinRefusal, HarmonySpecialAtTheWrongId) {
  auto model = preset_a_with_fake_tokenizer();
  auto tok = fake_o200k_tokenizer();
  for (const char* name : {"<|startoftext|>", "<|endoftext|>", "<|reserved_200000|>", "<|reserved_200001|>",
                           "<|stop|>" /* instead of <|return|> */, "<|constrain|>"}) {
    tok->tokens.push_back(name);
    tok->types.push_back(TokenType::Control);
  }
  model.tokenizer = tok;
  expect_refusal(model, "id 200002 must be <|return|>");
}

// Preset a's layer-3 mlp2 scales with one byte replaced.
TensorSourcePtr scales_with_byte(const CanonicalTensor& t, uint64_t index, uint8_t value) {
  auto bytes = read_all(*t.source);
  bytes.at(index) = value;
  return std::make_shared<OwnedSource>(std::move(bytes));
}

TEST(ModelBinRefusal, ScaleByte242WouldWrap) {
  auto model = preset_a_with_fake_tokenizer();
  auto& scales = tensor(model, TensorRole::Mlp2Scales, 3);
  const uint64_t per_expert = scales.source->size() / model.config.num_experts;
  scales.source = scales_with_byte(scales, 5 * per_expert + 7, 242);
  expect_refusal(model, "layers.3.mlp2.scales (expert 5): MXFP4 scale byte 242 at element 7");
}

TEST(ModelBinRefusal, ScaleByte241IsTheLargestThatFitsAndReadsBack) {
  auto model = preset_a_with_fake_tokenizer();
  auto& scales = tensor(model, TensorRole::Mlp2Scales, 3);
  scales.source = scales_with_byte(scales, 11, 241);
  TempDir out;
  write_modelbin_model(model, out / "model.bin", {});
  const auto back = load_modelbin_model(out / "model.bin");
  EXPECT_EQ(read_all(*back.get(TensorRole::Mlp2Scales, 3).source), read_all(*scales.source));
}

TEST(ModelBinRefusal, ModelBinScaleBelow14IsAFormatErrorWithItsOffset) {
  auto model = preset_a_with_fake_tokenizer();
  TempDir out;
  write_modelbin_model(model, out / "model.bin", {});
  auto bytes = read_file_bytes(out / "model.bin");
  const auto file = modelbin::ModelBinFile::parse(MappedFile::from_bytes(bytes, "probe"));
  const uint64_t at = file.layout().moe_block_offsets[1] + file.layout().expert.mlp1_scales.offset + 3;
  bytes[at] = 5;
  write_file_bytes(out / "bad.bin", bytes);
  const auto back = load_modelbin_model(out / "bad.bin");  // lazy: the error comes with the bytes
  try {
    read_all(*back.get(TensorRole::Mlp1Scales, 1).source);
    FAIL() << "scale byte 5 was accepted";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.offset(), at);
    EXPECT_EQ(e.field(), "block 1 expert 0 mlp1 scales");
  }
}

TEST(ModelBinRefusal, F32DenseTensorsAreConvertedToBf16AndReportedWhenLossy) {
  auto model = preset_a_with_fake_tokenizer();
  TempDir out;
  write_modelbin_model(model, out / "bf16.bin", {});

  // The same values as F32: exact in BF16, so the file is identical and nothing is reported.
  auto& norm = tensor(model, TensorRole::AttnNorm, 2);
  const auto bf16 = read_all(*norm.source);
  std::vector<uint8_t> f32(bf16.size() * 2);
  for (size_t i = 0; i < bf16.size() / 2; ++i)
    store_u32(f32.data() + 4 * i, std::bit_cast<uint32_t>(bf16_to_f32(load_u16(bf16.data() + 2 * i))));
  norm.source = std::make_shared<OwnedSource>(f32);
  norm.dtype = DType::F32;
  auto notes = write_modelbin_model(model, out / "f32.bin", {});
  EXPECT_EQ(file_sha256(out / "f32.bin"), file_sha256(out / "bf16.bin"));
  for (const auto& n : notes) EXPECT_EQ(n.find("layers.2.attn_norm.weight"), std::string::npos) << n;

  // Values BF16 cannot hold: rounded, and the note says how many and by how much.
  store_u32(f32.data(), std::bit_cast<uint32_t>(1.0f + 1.0f / 1024));
  norm.source = std::make_shared<OwnedSource>(f32);
  notes = write_modelbin_model(model, out / "lossy.bin", {});
  bool reported = false;
  for (const auto& n : notes)
    reported |= n.find("layers.2.attn_norm.weight: F32 -> BF16 changed 1 of 64 values") != std::string::npos;
  EXPECT_TRUE(reported);
}

// A GGUF with Q8_0 experts (layer 1) and MXFP4 ones (the others): model.bin holds experts only as
// the MXFP4 pair, so layer 1's are requantized (the pair with_mxfp4_experts makes), the notes
// name them, and --same calls them lossy as declared.
TEST(ModelBinRefusal, ExpertsInAnotherTypeAreRequantizedToMxfp4AndReported) {
  TempDir out;
  auto model = with_experts_as(synthesize_model(synth_preset("a")), 1, TensorRole::Mlp1Blocks, DType::Q8_0);
  model = with_experts_as(model, 1, TensorRole::Mlp2Blocks, DType::Q8_0);
  write_gguf_model(model, out / "experts.gguf", {});
  auto gguf = load_gguf_model(out / "experts.gguf");
  gguf.tokenizer = fake_o200k_tokenizer();
  const auto notes = write_modelbin_model(gguf, out / "model.bin", {});
  size_t reported = 0;
  for (const auto& n : notes)
    reported += n.rfind("layers.1.mlp1.blocks: Q8_0 -> MXFP4 changed ", 0) == 0 ||
                n.rfind("layers.1.mlp2.blocks: Q8_0 -> MXFP4 changed ", 0) == 0;
  EXPECT_EQ(reported, 2u) << ::testing::PrintToString(notes);

  // Layer 1's pairs are the ones the HF writer writes too (GgufRequantizedExperts.*: ggml's
  // quantizer of the GGUF's values, lossy as declared to --same); the other experts, MXFP4 in the
  // GGUF, are its bytes.
  const auto bin = load_modelbin_model(out / "model.bin");
  std::vector<LossyStep> lossy;
  const auto paired = with_mxfp4_experts(gguf, lossy);
  for (const auto& t : bin.tensors) {
    if (!is_mxfp4_role(t.spec.role)) continue;
    ASSERT_TRUE(holds_mxfp4(t)) << t.spec.name;
    const auto& want = t.spec.layer == 1 ? *paired.find(t.spec.name) : *gguf.find(t.spec.name);
    EXPECT_EQ(read_all(*t.source), read_all(*want.source)) << t.spec.name;
  }
  // --same on the experts alone (the rest is the model.bin conversion of any model): layer 1's
  // lossy as declared, the others the same bytes.
  auto experts_of = [](CanonicalModel m) {
    std::erase_if(m.tensors, [](const CanonicalTensor& t) { return !is_mxfp4_role(t.spec.role); });
    return m;
  };
  const ModelComparison c = compare_models(experts_of(gguf), experts_of(bin), 2);
  EXPECT_FALSE(c.any_different()) << c.to_table();
  ASSERT_EQ(c.tensors.size(), 16u);
  for (const auto& r : c.tensors) {
    const bool layer1 = r.name.rfind("layers.1.", 0) == 0;
    EXPECT_EQ(r.verdict, layer1 ? Verdict::LossyAsDeclared : Verdict::IdenticalAfterTransform) << r.name << ": " << r.detail;
  }
}

}  // namespace
}  // namespace gptoss::test

// gptoss-verify on a GGUF whose dense tensors are in every type llama-quantize writes
// (data/quant-goldens/mixed.gguf, quantized by llama.cpp from the synthesized model it is
// compared with here): --same declares each tensor's loss, --values reads every type.
#include <gtest/gtest.h>

#include "convert/gguf/gguf_model.h"
#include "convert/synthesize.h"
#include "tests/test_support.h"
#include "tests/verify/verify_test_support.h"
#include "verify/declared_loss.h"
#include "verify/equivalence.h"
#include "verify/structural.h"

namespace gptoss {
namespace {
namespace fs = std::filesystem;

fs::path mixed_gguf() { return fs::path(GPTOSS_DATA_DIR) / "quant-goldens" / "mixed.gguf"; }

// The synthesized model the mixed file was quantized from: preset 20b's statistics at the widths
// the file's metadata gives (scripts/make_quant_goldens.sh).
CanonicalModel source_of(const CanonicalModel& mixed) {
  SynthPreset p = synth_preset("20b");
  const GptOssConfig& c = mixed.config;
  p.layers = c.num_layers;
  p.vocab = c.vocab_size;
  p.hidden = c.hidden_size;
  p.inter = c.intermediate_size;
  p.heads = c.num_heads;
  p.kv = c.num_kv_heads;
  p.head_dim = c.head_dim;
  p.experts = c.num_experts;
  p.topk = c.experts_per_token;
  return synthesize_model(p);
}

TEST(VerifyQuantMix, SameDeclaresEachQuantizedTensorsLoss) {
  const CanonicalModel mixed = load_gguf_model(mixed_gguf());
  const CanonicalModel source = source_of(mixed);
  const ModelComparison c = compare_models(source, mixed, 2);
  EXPECT_FALSE(c.any_different()) << c.to_table();
  size_t lossy = 0;
  for (const auto& t : c.tensors) {
    const CanonicalTensor& quantized = *mixed.find(t.name);
    if (is_mxfp4_role(quantized.spec.role) || dtype_info(quantized.dtype).block_elements == 1) {
      // F32 in the file, BF16 in the source: the same values; the experts: the same MXFP4 bytes.
      EXPECT_EQ(t.verdict, Verdict::IdenticalAfterTransform) << t.name;
      continue;
    }
    ++lossy;
    EXPECT_EQ(t.verdict, Verdict::LossyAsDeclared) << t.name;
    EXPECT_GT(t.relative_rms_error, 0) << t.name;
    EXPECT_LE(t.relative_rms_error, rms_error_ceiling(quantized.dtype)) << t.name;
    EXPECT_NE(t.detail.find(std::string(dtype_name(quantized.dtype)) + " allows"), std::string::npos) << t.detail;
  }
  EXPECT_EQ(lossy, 18u);
}

TEST(VerifyQuantMix, SameFindsATensorThatIsNotAnApproximation) {
  const CanonicalModel mixed = load_gguf_model(mixed_gguf());
  CanonicalModel source = source_of(mixed);
  // Swap K and V of layer 0 in the source: same shapes, unrelated values of the same scale.
  CanonicalTensor* tk = nullptr;
  CanonicalTensor* tv = nullptr;
  for (auto& t : source.tensors) {
    if (t.spec.role == TensorRole::AttnK && t.spec.layer == 0) tk = &t;
    if (t.spec.role == TensorRole::AttnV && t.spec.layer == 0) tv = &t;
  }
  ASSERT_TRUE(tk && tv);
  std::swap(tk->source, tv->source);
  const ModelComparison c = compare_models(source, mixed, 2);
  EXPECT_TRUE(c.any_different());
  for (const auto* t : {tk, tv}) {
    const TensorComparison* r = test::find_comparison(c, t->spec.name);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->verdict, Verdict::Different) << r->name;
    EXPECT_GT(r->relative_rms_error, 1.0) << r->name;
    EXPECT_NE(r->detail.find("more than quantization gives"), std::string::npos) << r->detail;
  }
}

TEST(VerifyQuantMix, ValuesReadsEveryType) {
  const auto result = verify_model(mixed_gguf(), {true, 2});
  for (const auto& f : result.report.findings())
    EXPECT_NE(f.check, "data") << f.item << ": " << f.message;  // every tensor decodes
  size_t quantized = 0;
  for (const auto& s : result.stats) {
    if (s.dtype == "U8") continue;  // the experts' MXFP4 bytes
    EXPECT_EQ(s.nan + s.inf, 0u) << s.name;
    EXPECT_GT(s.abs_max, 0) << s.name;
    EXPECT_LT(s.zeros, s.elements) << s.name;
    quantized += s.dtype != "F32";
  }
  EXPECT_EQ(quantized, 18u);
}

}  // namespace
}  // namespace gptoss

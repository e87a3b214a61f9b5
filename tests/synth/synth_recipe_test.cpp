// The TrainedLike recipe is what synthesize.h says, element by element, and stays the same bytes
// (the 20b and 120b checkpoints of one machine equal another's): a few values recomputed here from
// splitmix64, and the SHA-256 of each tensor kind's first bytes pinned.
#include <gtest/gtest.h>

#include <cmath>

#include "convert/synthesize.h"
#include "formats/core/float16.h"
#include "verify/sha256.h"

namespace gptoss {
namespace {

const CanonicalTensor& tensor(const CanonicalModel& m, const std::string& name) {
  const auto* t = m.find(name);
  EXPECT_NE(t, nullptr) << name;
  return *t;
}

std::vector<uint8_t> first_bytes(const CanonicalTensor& t, size_t n) {
  std::vector<uint8_t> bytes(std::min<uint64_t>(n, t.source->size()));
  t.source->read(0, bytes);
  return bytes;
}

TEST(SynthRecipe, BellValuesAreTheSumOfFourBytesScaled) {
  const auto model = synthesize_model(synth_preset("20b"));
  const auto& q = tensor(model, "layers.0.attn_q.weight");
  const uint64_t seed = synth_tensor_seed(1, "model.layers.0.self_attn.q_proj.weight");
  const auto bytes = first_bytes(q, 64);
  const float unit = static_cast<float>(1.0 / std::sqrt(2880.0) / std::sqrt(21845.0));
  double sum_squares = 0;
  for (size_t i = 0; i < 32; ++i) {
    const uint64_t w = synth_word(seed, i);
    const int sum = static_cast<int>((w & 0xFF) + (w >> 8 & 0xFF) + (w >> 16 & 0xFF) + (w >> 24 & 0xFF));
    const uint16_t expected = f32_to_bf16(static_cast<float>(sum - 510) * unit);
    EXPECT_EQ(bytes[2 * i] | bytes[2 * i + 1] << 8, expected) << i;
    sum_squares += std::pow(bf16_to_f32(expected), 2);
  }
  EXPECT_GT(std::sqrt(sum_squares / 32), 0.5 / std::sqrt(2880.0));
  EXPECT_LT(std::sqrt(sum_squares / 32), 2.0 / std::sqrt(2880.0));
  // MXFP4 scales of mlp1: 2^-8 or 2^-7 (bytes 119, 120) at the 20b widths.
  for (uint8_t s : first_bytes(tensor(model, "layers.0.mlp1.scales"), 256)) EXPECT_TRUE(s == 119 || s == 120) << int{s};
  for (uint8_t s : first_bytes(tensor(model, "layers.0.mlp2.scales"), 256)) EXPECT_TRUE(s == 118 || s == 119) << int{s};
}

// Measured when the recipe was written (GCC 12, x86-64); any change to these bytes changes every
// 20b/120b checkpoint, and must be deliberate.
TEST(SynthRecipe, TwentyBBytesArePinned) {
  const auto model = synthesize_model(synth_preset("20b"));
  const std::pair<const char*, const char*> pinned[] = {
      {"embedding.weight", "7d13c86bc8d16d15f23e3358768c22d4d9c9b7c521bdf9aaaa30fddb90e09bdb"},
      {"unembedding.weight", "5f9f6031382767356a799e8e2318d79f39c4c70c18bf5f31424e7a26cb373e8e"},
      {"layers.3.attn_out.weight", "2297bc9faeb58734b1921a480b74fe7c383a9934188d1aea4273c86b67540b10"},
      {"layers.3.router.weight", "604c0657ea63e148855da685d4bbb1ff2ae8636f3fa29732725b8adefe78aec3"},
      {"layers.3.mlp1.scales", "e2faf95b63b569b5235bb1e282e87474284a2dcb02956c23c717d73835da9f6b"},
      {"layers.3.mlp2.bias", "2ac699f06ae904423cb1aab8fc3864b4da8a7edf144934914e652bccb5945679"},
  };
  for (const auto& [name, sha] : pinned) {
    const auto* t = model.find(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(sha256_hex(first_bytes(*t, 65536)), sha) << name;
  }
}

}  // namespace
}  // namespace gptoss

// The HF and original layouts of preset a map to the same canonical model, byte for byte, and
// conversions between them round-trip exactly.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "convert/safetensors_model.h"
#include "convert/synthesize.h"
#include "convert/dtype_convert.h"
#include "formats/core/float16.h"
#include "tests/test_support.h"

namespace gptoss {
namespace {

void expect_same_tensors(const CanonicalModel& a, const CanonicalModel& b) {
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const auto& x = a.tensors[i];
    const auto& y = b.tensors[i];
    ASSERT_EQ(x.spec.name, y.spec.name);
    EXPECT_EQ(x.spec.shape, y.spec.shape) << x.spec.name;
    EXPECT_EQ(x.dtype, y.dtype) << x.spec.name;
    EXPECT_TRUE(read_all(*x.source) == read_all(*y.source)) << x.spec.name << " differs";
  }
}

TEST(Layouts, HfAndOriginalGiveTheSameCanonicalModel) {
  const auto& ck = test::preset_a_checkpoint();
  const auto hf = load_safetensors_model(ck / "hf");
  const auto orig = load_safetensors_model(ck / "original");
  EXPECT_EQ(hf.tensors.size(), 3u + 4u * 19u);
  expect_same_tensors(hf, orig);
  expect_same_tensors(hf, synthesize_model(synth_preset("a")));
  // Q/K/V out of the fused original QKV are zero-copy slices of the mapped file.
  EXPECT_TRUE(orig.get(TensorRole::AttnK, 2).source->contiguous().has_value());
  EXPECT_NE(orig.get(TensorRole::AttnK, 2).origin.find("(K rows)"), std::string::npos);
}

TEST(Layouts, RoundTripsAreByteIdentical) {
  const auto& ck = test::preset_a_checkpoint();
  test::TempDir dir;
  SafetensorsWriteOptions to_orig;
  to_orig.layout = CheckpointLayout::Original;
  write_safetensors_model(load_safetensors_model(ck / "hf"), dir / "orig", to_orig);
  EXPECT_EQ(test::file_sha256(dir / "orig" / "model.safetensors"), test::file_sha256(ck / "original" / "model.safetensors"));
  write_safetensors_model(load_safetensors_model(dir / "orig"), dir / "hf", SafetensorsWriteOptions{});
  EXPECT_EQ(test::file_sha256(dir / "hf" / "model.safetensors"), test::file_sha256(ck / "hf" / "model.safetensors"));
}

TEST(Layouts, ShardedCheckpointReadsLikeOneFile) {
  const auto& ck = test::preset_a_checkpoint();
  test::TempDir dir;
  SafetensorsWriteOptions sharded;
  sharded.max_shard_bytes = 10u << 20;
  write_safetensors_model(load_safetensors_model(ck / "hf"), dir / "sharded", sharded);
  EXPECT_TRUE(std::filesystem::exists(dir / "sharded" / "model.safetensors.index.json"));
  int shards = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir / "sharded"))
    shards += e.path().filename().string().starts_with("model-0000");
  EXPECT_GE(shards, 3);  // embedding and unembedding are 25.7 MB each: shards of their own
  expect_same_tensors(load_safetensors_model(dir / "sharded"), load_safetensors_model(ck / "hf"));
}

TEST(Layouts, F32DenseIsLosslessAndBackToBf16IsExact) {
  const auto& ck = test::preset_a_checkpoint();
  test::TempDir dir;
  SafetensorsWriteOptions f32;
  f32.dense_dtype = DType::F32;
  const auto notes = write_safetensors_model(load_safetensors_model(ck / "hf"), dir / "f32", f32);
  EXPECT_TRUE(notes.empty());
  const auto wide = load_safetensors_model(dir / "f32");
  EXPECT_EQ(wide.get(TensorRole::AttnQ, 0).dtype, DType::F32);
  EXPECT_EQ(wide.get(TensorRole::Mlp1Blocks, 0).dtype, DType::U8);
  const auto back_notes = write_safetensors_model(wide, dir / "bf16", SafetensorsWriteOptions{});
  EXPECT_TRUE(back_notes.empty()) << back_notes.front();  // every value is exact in bf16
  EXPECT_EQ(test::file_sha256(dir / "bf16" / "model.safetensors"), test::file_sha256(ck / "hf" / "model.safetensors"));
}

TEST(Layouts, LossyConversionIsMeasured) {
  // 1 + 2^-10 is not representable in bf16: the converter must say how far it moved.
  std::vector<uint8_t> bytes(4 * 32);
  for (int i = 0; i < 32; ++i) {
    const float v = i == 3 ? 1.0f + 1.0f / 1024 : 0.5f;
    std::memcpy(bytes.data() + 4 * i, &v, 4);
  }
  auto stats = std::make_shared<ConversionStats>();
  auto src = convert_dtype(std::make_shared<OwnedSource>(bytes), DType::F32, DType::BF16, 32, stats);
  const auto out = read_all(*src);
  EXPECT_EQ(bf16_to_f32(load_u16(out.data() + 6)), 1.0f);
  EXPECT_EQ(stats->changed, 1u);
  EXPECT_FLOAT_EQ(static_cast<float>(stats->max_abs_error), 1.0f / 1024);
}

}  // namespace
}  // namespace gptoss

// A corpus of crafted corruptions of the preset-a safetensors checkpoint, each caught with the
// right finding; manifests; cross-layout equivalence.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "convert/safetensors_model.h"
#include "formats/core/error.h"
#include "formats/core/mapped_file.h"
#include "formats/safetensors/safetensors_file.h"
#include "tests/test_support.h"
#include "tests/verify/verify_test_support.h"
#include "verify/checksums.h"
#include "verify/equivalence.h"
#include "verify/structural.h"

namespace gptoss {
namespace {
namespace fs = std::filesystem;

using Copy = test::HfCopy;
using test::has_finding;

TEST(VerifyClean, PresetACheckpointsHaveNoFindings) {
  for (const char* layout : {"hf", "original"}) {
    const auto result = verify_model(test::preset_a_checkpoint() / layout, {true, 2});
    EXPECT_FALSE(result.report.has_problems()) << layout << "\n" << result.report.to_table();
    EXPECT_EQ(result.stats.size(), 79u);
  }
}

TEST(VerifyCorruption, BitFlipInDataIsCaughtByManifestAndEquivalence) {
  Copy copy;
  const auto before = compute_checksums(list_stored_items(copy.hf), copy.dir.path(), 2);
  auto b = copy.bytes();
  b[copy.tensor_offset("model.layers.2.self_attn.k_proj.weight") + 100] ^= 0x01;
  copy.write(b);
  const auto after = compute_checksums(list_stored_items(copy.hf), copy.dir.path(), 2);
  const auto mismatches = check_manifest(before, after);
  ASSERT_EQ(mismatches.size(), 2u);  // the file and the one tensor
  EXPECT_EQ(mismatches[0].label, "hf/model.safetensors");
  EXPECT_EQ(mismatches[1].label, "hf/model.safetensors:model.layers.2.self_attn.k_proj.weight");

  const auto cmp = compare_models(load_safetensors_model(test::preset_a_checkpoint() / "hf"), load_safetensors_model(copy.hf), 2);
  ASSERT_TRUE(cmp.any_different());
  for (const auto& t : cmp.tensors)
    EXPECT_EQ(t.verdict == Verdict::Different, t.name == "layers.2.attn_k.weight") << t.name;
}

TEST(VerifyCorruption, HeaderFieldFlipMakesTheFileUnreadable) {
  Copy copy;
  copy.edit_header("\"dtype\":\"BF16\"", "\"dtype\":\"BF17\"");
  try {
    verify_model(copy.hf, {});
    FAIL() << "a tensor of dtype BF17 was accepted";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.file(), copy.weights().string());
    EXPECT_NE(e.field().find("dtype"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("BF17"), std::string::npos) << e.what();
  }
}

TEST(VerifyCorruption, TruncationMakesTheFileUnreadable) {
  Copy copy;
  fs::resize_file(copy.weights(), fs::file_size(copy.weights()) - 1);
  try {
    verify_model(copy.hf, {});
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
}

TEST(VerifyCorruption, MisalignedHeaderIsAWarning) {
  Copy copy;
  auto b = copy.bytes();
  // Drop one padding space from the header: still valid, but the data section is no longer 8-aligned.
  const uint64_t n = load_u64(b.data());
  ASSERT_EQ(b[8 + n - 1], ' ');
  b.erase(b.begin() + 8 + static_cast<long>(n) - 1);
  store_u64(b.data(), n - 1);
  copy.write(b);
  const auto result = verify_model(copy.hf, {});
  EXPECT_TRUE(has_finding(result.report, "padding", "header")) << result.report.to_table();
  EXPECT_TRUE(has_finding(result.report, "alignment", "model.")) << result.report.to_table();
}

TEST(VerifyCorruption, SwappedTensorsAreDifferent) {
  Copy copy;
  copy.edit_header("model.layers.1.self_attn.k_proj.weight", "model.layers.1.self_attn.X_proj.weight");
  copy.edit_header("model.layers.1.self_attn.v_proj.weight", "model.layers.1.self_attn.k_proj.weight");
  copy.edit_header("model.layers.1.self_attn.X_proj.weight", "model.layers.1.self_attn.v_proj.weight");
  EXPECT_FALSE(verify_model(copy.hf, {}).report.has_problems());  // structurally fine...
  const auto cmp = compare_models(load_safetensors_model(test::preset_a_checkpoint() / "hf"), load_safetensors_model(copy.hf), 2);
  size_t different = 0;
  for (const auto& t : cmp.tensors)
    if (t.verdict == Verdict::Different) {
      ++different;
      EXPECT_TRUE(t.name == "layers.1.attn_k.weight" || t.name == "layers.1.attn_v.weight") << t.name;
    }
  EXPECT_EQ(different, 2u);  // ...but not the same weights
}

TEST(VerifyCorruption, WrongShapeIsAModelFinding) {
  Copy copy;
  // k_proj [128,64] declared as [64,128]: same byte size, so the container is valid.
  auto b = copy.bytes();
  const uint64_t n = load_u64(b.data());
  std::string header(b.begin() + 8, b.begin() + 8 + static_cast<long>(n));
  const std::string key = "\"model.layers.0.self_attn.k_proj.weight\":{\"dtype\":\"BF16\",\"shape\":[128,64]";
  const auto pos = header.find(key);
  ASSERT_NE(pos, std::string::npos);
  const std::string replacement = "\"model.layers.0.self_attn.k_proj.weight\":{\"dtype\":\"BF16\",\"shape\":[64,128]";
  std::memcpy(b.data() + 8 + pos, replacement.data(), replacement.size());
  copy.write(b);
  const auto result = verify_model(copy.hf, {});
  ASSERT_TRUE(has_finding(result.report, "model", "tensors")) << result.report.to_table();
  EXPECT_NE(result.report.to_table().find("layers.0.attn_k.weight"), std::string::npos) << result.report.to_table();
}

TEST(VerifyCorruption, InjectedNaNIsAValueFinding) {
  Copy copy;
  auto b = copy.bytes();
  const uint64_t off = copy.tensor_offset("model.layers.3.self_attn.q_proj.weight") + 2 * 17;
  store_u16(b.data() + off, 0x7fc0);  // bf16 quiet NaN
  copy.write(b);
  EXPECT_FALSE(verify_model(copy.hf, {}).report.has_problems());  // structure alone cannot see it
  const auto result = verify_model(copy.hf, {true, 2});
  const auto* nan = test::find_finding(result.report, "nan", "layers.3.attn_q.weight");
  ASSERT_NE(nan, nullptr) << result.report.to_table();
  EXPECT_EQ(nan->message, "1 NaN values (first at element 17)");
  EXPECT_EQ(nan->offset, off);  // the element itself: HF stores Q in the canonical layout
  EXPECT_EQ(nan->file, copy.weights().string());
}

TEST(VerifyCorruption, ScaleByteOutOfRangeIsFlagged) {
  Copy copy;
  auto b = copy.bytes();
  b[copy.tensor_offset("model.layers.1.mlp.experts.down_proj_scales") + 5] = 255;
  copy.write(b);
  const auto result = verify_model(copy.hf, {true, 2});
  EXPECT_TRUE(has_finding(result.report, "mxfp4-scale", "layers.1.mlp2.scales")) << result.report.to_table();
}

TEST(VerifyCli, ManifestOnOneCopyFailsOnAnotherWithOneFlippedBit) {
  Copy original, copy;
  const std::string tool = (test::tools_dir() / "gptoss-verify").string();
  auto w = test::run_command(tool + " -q " + original.hf.string() + " --write-manifest " + (original.dir / "MANIFEST").string());
  ASSERT_EQ(w.exit_code, 0) << w.output;
  // The copy elsewhere: same relative layout, one flipped bit.
  fs::copy_file(original.dir / "MANIFEST", copy.dir / "MANIFEST");
  auto ok = test::run_command(tool + " -q --check " + (copy.dir / "MANIFEST").string());
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  auto b = copy.bytes();
  b[copy.tensor_offset("model.layers.0.mlp.experts.gate_up_proj_blocks") + 12345] ^= 0x10;
  copy.write(b);
  auto bad = test::run_command(tool + " -q --check " + (copy.dir / "MANIFEST").string());
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.output.find("FAILED  hf/model.safetensors:model.layers.0.mlp.experts.gate_up_proj_blocks"), std::string::npos)
      << bad.output;
  EXPECT_NE(bad.output.find("80 of 82 items match"), std::string::npos) << bad.output;
}

TEST(VerifyCli, SameAcrossLayoutsAndExitCodes) {
  const std::string tool = (test::tools_dir() / "gptoss-verify").string();
  const auto& ck = test::preset_a_checkpoint();
  auto same = test::run_command(tool + " --same " + (ck / "hf").string() + " " + (ck / "original").string());
  EXPECT_EQ(same.exit_code, 0) << same.output;
  EXPECT_NE(same.output.find("SAME WEIGHTS"), std::string::npos);
  auto missing = test::run_command(tool + " /no/such/model.gguf");
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  auto json = test::run_command(tool + " --json " + (ck / "hf").string());
  EXPECT_EQ(json.exit_code, 0) << json.output;
  const auto j = nlohmann::json::parse(json.output);
  EXPECT_EQ(j["errors"], 0);
  EXPECT_EQ(j["format"], "safetensors");
}

}  // namespace
}  // namespace gptoss

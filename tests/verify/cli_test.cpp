// gptoss-verify's exit statuses and outputs: 1 on findings and on different weights, 2 on a
// corrupt file, --expect-sha256, --digest across lossless formats, --json findings.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

#include "formats/modelbin/modelbin_file.h"
#include "tests/verify/verify_test_support.h"

namespace gptoss {
namespace {
namespace fs = std::filesystem;

using test::verify;

TEST(VerifyCliExit, StructuralFindingExitsOne) {
  test::HfCopy copy;
  auto b = copy.bytes();
  const uint64_t n = load_u64(b.data());  // drop one header padding space: data no longer 8-aligned
  b.erase(b.begin() + 8 + static_cast<long>(n) - 1);
  store_u64(b.data(), n - 1);
  copy.write(b);
  const auto r = verify(copy.hf.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("warning  [padding]"), std::string::npos) << r.output;
}

TEST(VerifyCliExit, SameWithADifferentTensorExitsOne) {
  test::HfCopy copy;
  auto b = copy.bytes();
  b[copy.tensor_offset("model.layers.3.self_attn.o_proj.weight") + 10] ^= 0x20;
  copy.write(b);
  const auto r = verify("--same " + (test::preset_a_checkpoint() / "hf").string() + " " + copy.hf.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("layers.3.attn_out.weight: different"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("DIFFERENT"), std::string::npos);
}

TEST(VerifyCliExit, CorruptFileExitsTwoNamingTheField) {
  test::TempDir dir;
  auto b = test::read_file_bytes(test::preset_a_bf16_gguf());
  b[4] = 9;  // GGUF version 9
  test::write_file_bytes(dir / "bad.gguf", b);
  const auto r = verify((dir / "bad.gguf").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("version at byte 4: unsupported GGUF version 9"), std::string::npos) << r.output;
}

TEST(VerifyCliExpectSha256, MatchInEitherCaseExitsZeroMismatchOne) {
  const fs::path file = test::preset_a_checkpoint() / "hf" / "model.safetensors";
  const std::string hex = test::file_sha256(file);
  std::string upper = hex;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  EXPECT_EQ(verify(file.string() + " --expect-sha256 " + hex).exit_code, 0);
  const auto upper_run = verify(file.string() + " --expect-sha256 " + upper);
  EXPECT_EQ(upper_run.exit_code, 0) << upper_run.output;
  EXPECT_NE(upper_run.output.find("OK  "), std::string::npos);
  std::string wrong = hex;
  wrong[0] = wrong[0] == '0' ? '1' : '0';
  const auto mismatch = verify(file.string() + " --expect-sha256 " + wrong);
  EXPECT_EQ(mismatch.exit_code, 1) << mismatch.output;
  EXPECT_NE(mismatch.output.find("FAILED  " + file.string() + "  sha256 " + hex), std::string::npos) << mismatch.output;
}

TEST(VerifyCliDigest, ModelDigestEqualAcrossHfOriginalAndBf16Gguf) {
  const auto& ck = test::preset_a_checkpoint();
  std::vector<std::string> digests;
  for (const fs::path& p : {ck / "hf", ck / "original", test::preset_a_bf16_gguf()}) {
    const auto r = verify("--digest --json " + p.string());
    ASSERT_EQ(r.exit_code, 0) << p << "\n" << r.output;
    const auto j = nlohmann::json::parse(r.output);
    digests.push_back(j["model_digest"].get<std::string>());
    EXPECT_EQ(j["canonical_digests"].size(), 79u);
  }
  EXPECT_EQ(digests[0].size(), 64u);
  EXPECT_EQ(digests[1], digests[0]);
  EXPECT_EQ(digests[2], digests[0]);
}

TEST(VerifyCliJson, FindingCarriesSeverityFileItemOffsetAndExpected) {
  GOLDENS_OR_SKIP();
  test::TempDir dir;
  const fs::path file = dir / "model.bin";
  fs::copy_file(*goldens / "a" / "model.bin", file);
  uint64_t at = 0;
  for (const auto& r : modelbin::ModelBinFile::open(file).layout().write_order())
    if (r.name == "block 0 expert 1 mlp2 scales") at = r.region.offset + 9;
  ASSERT_NE(at, 0u);
  auto b = test::read_file_bytes(file);
  b[at] = 13;  // below model.bin's +14
  test::write_file_bytes(file, b);
  const auto r = verify("--values --json " + file.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;  // a finding, not an unreadable file
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["errors"], 1);
  const nlohmann::json* finding = nullptr;
  for (const auto& f : j["findings"])
    if (f["severity"] == "error") finding = &f;
  ASSERT_NE(finding, nullptr) << r.output;
  EXPECT_EQ((*finding)["check"], "mxfp4-scale");
  EXPECT_EQ((*finding)["file"], file.string());
  EXPECT_EQ((*finding)["item"], "block 0 expert 1 mlp2 scales");
  EXPECT_EQ((*finding)["offset"], at);
  EXPECT_EQ((*finding)["expected"], "bytes the reader can decode");
  EXPECT_NE((*finding)["message"].get<std::string>().find("MXFP4 scale byte 13"), std::string::npos) << r.output;
}

// Each mode reads only its own options: one it would ignore is refused (exit 2) by name.
TEST(VerifyCliOptions, OptionsTheModeIgnoresAreRefused) {
  const std::string hf = (test::preset_a_checkpoint() / "hf").string();
  const struct {
    std::string arguments, message;
  } cases[] = {
      {"--check m.txt --values", "--values cannot be combined with --check"},
      {"--check m.txt " + hf, "paths cannot be combined with --check (which takes no PATH)"},
      {"--same " + hf + " " + hf + " --digest", "--digest cannot be combined with --same"},
      {hf + " --write-manifest m.txt --values", "--values cannot be combined with --write-manifest"},
      {hf + " --write-manifest m.txt --json", "--json cannot be combined with --write-manifest"},
      {hf + "/config.json --expect-sha256 00 --digest", "--digest cannot be combined with --expect-sha256"},
  };
  for (const auto& c : cases) {
    const auto r = verify(c.arguments);
    EXPECT_EQ(r.exit_code, 2) << c.arguments << "\n" << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.arguments << "\n" << r.output;
  }
}

}  // namespace
}  // namespace gptoss

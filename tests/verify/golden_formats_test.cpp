// gptoss-verify on every golden format, canonical digests across formats, and corruptions of
// GGUF and model.bin files.
#include <gtest/gtest.h>

#include <cstring>

#include "convert/gguf/gguf_model.h"
#include "convert/model_io.h"
#include "formats/core/error.h"
#include "formats/core/mapped_file.h"
#include "formats/gguf/gguf_file.h"
#include "formats/modelbin/modelbin_file.h"
#include "tests/test_support.h"
#include "tests/verify/verify_test_support.h"
#include "verify/canonical_digest.h"
#include "verify/checksums.h"
#include "verify/equivalence.h"
#include "verify/structural.h"

namespace gptoss {
namespace {
namespace fs = std::filesystem;

using test::has_finding;
size_t count(const ModelComparison& c, Verdict v) { return test::count_verdict(c, v); }

TEST(VerifyGoldens, EveryGoldenFileVerifiesClean) {
  GOLDENS_OR_SKIP();
  for (const char* name : {"model.bin", "model-q8_0.gguf"}) {
    const auto result = verify_model(*goldens / "a" / name, {true, 2});
    EXPECT_FALSE(result.report.has_problems()) << name << "\n" << result.report.to_table();
    EXPECT_EQ(result.stats.size(), 79u) << name;
    size_t q8_0 = 0;
    for (const auto& s : result.stats)
      if (s.q8_0) {
        ++q8_0;
        EXPECT_EQ(s.q8_0->blocks * 32, s.elements) << s.name;
        EXPECT_GT(s.q8_0->min, 0) << s.name;  // llama.cpp's scales: amax / 127 of every block
        EXPECT_NEAR(s.q8_0->max * 127, s.abs_max, s.abs_max * 1e-3) << s.name;
      }
    EXPECT_EQ(q8_0, std::string(name) == "model.bin" ? 0u : 18u) << name;
  }
}

TEST(VerifyGoldens, SameCanonicalDigestsInEveryLosslessFormat) {
  GOLDENS_OR_SKIP();
  TOKENIZER_OR_SKIP();
  const auto& ck = test::preset_a_checkpoint();
  test::TempDir dir;
  const auto hf = load_model(ck / "hf");
  write_gguf_model(hf, dir / "bf16.gguf", GgufWriteOptions{});
  const auto reference = canonical_digests(hf, 2);
  for (const fs::path& other : {ck / "original", dir / "bf16.gguf", *goldens / "a" / "model.bin"}) {
    const auto model = load_model(other);
    const auto digests = canonical_digests(model, 2);
    ASSERT_EQ(digests.size(), reference.size());
    const bool drops_vocab = other.extension() == ".bin";
    for (size_t i = 0; i < digests.size(); ++i) {
      const bool vocab = digests[i].name == "embedding.weight" || digests[i].name == "unembedding.weight";
      if (drops_vocab && vocab) {
        EXPECT_NE(digests[i].sha256, reference[i].sha256) << other << " " << digests[i].name;
      } else {
        EXPECT_EQ(digests[i].sha256, reference[i].sha256) << other << " " << digests[i].name;
      }
    }
  }
  // model.bin: exactly the vocabulary rows are lossy as declared, nothing is different.
  const auto cmp = compare_models(hf, load_model(*goldens / "a" / "model.bin"), 2);
  EXPECT_EQ(count(cmp, Verdict::LossyAsDeclared), 2u) << cmp.to_table();
  EXPECT_EQ(count(cmp, Verdict::Different), 0u) << cmp.to_table();
  EXPECT_GT(count(cmp, Verdict::IdenticalAfterTransform), 0u);  // QKV interleave/prescale, scales +14, experts regrouped
  EXPECT_TRUE(cmp.config_differences.empty()) << cmp.to_table();
}

TEST(VerifyGoldens, GoldenQ8_0GgufReportsExactlyTheQ8_0TensorsAsLossy) {
  GOLDENS_OR_SKIP();
  const auto hf = load_model(test::preset_a_checkpoint() / "hf");
  const auto q8 = load_model(*goldens / "a" / "model-q8_0.gguf");
  const auto cmp = compare_models(hf, q8, 2);
  size_t lossy = 0;
  for (const auto& t : cmp.tensors) {
    const auto* tensor = q8.find(t.name);
    ASSERT_NE(tensor, nullptr) << t.name;
    if (tensor->dtype == DType::Q8_0) {
      ++lossy;
      EXPECT_EQ(t.verdict, Verdict::LossyAsDeclared) << t.name;
      EXPECT_GT(t.max_abs_error, 0) << t.name;
      EXPECT_LT(t.max_rel_error, 0.01) << t.name;  // Q8_0 keeps 7 bits: far below 1% of the range
    } else {
      EXPECT_NE(t.verdict, Verdict::Different) << t.name;
      EXPECT_NE(t.verdict, Verdict::LossyAsDeclared) << t.name;
    }
  }
  EXPECT_EQ(lossy, 2u + 4u * 4u);  // embedding, unembedding, and q/k/v/o of each layer
  EXPECT_FALSE(cmp.any_different()) << cmp.to_table();
}

// --- corruptions of a GGUF -------------------------------------------------------------------

struct GgufCopy {
  test::TempDir dir;
  fs::path file = dir / "model.gguf";
  GgufCopy() { fs::copy_file(test::preset_a_bf16_gguf(), file); }
  std::vector<uint8_t> bytes() const { return test::read_file_bytes(file); }
  void write(const std::vector<uint8_t>& b) const { test::write_file_bytes(file, b); }
  const GgufTensorInfo& tensor(const GgufFile& f, const std::string& name) const { return *f.find_tensor(name); }
};

TEST(VerifyGgufCorruption, DataBitFlipShowsInManifestAndEquivalence) {
  GgufCopy copy;
  const auto before = compute_checksums(list_stored_items(copy.file), copy.dir.path(), 2);
  auto b = copy.bytes();
  {
    const auto f = GgufFile::open(copy.file);
    const auto& t = copy.tensor(f, "blk.1.ffn_up_exps.weight");
    b[f.data_offset() + t.offset + 77] ^= 0x04;
  }
  copy.write(b);
  const auto mismatches = check_manifest(before, compute_checksums(list_stored_items(copy.file), copy.dir.path(), 2));
  ASSERT_EQ(mismatches.size(), 2u);
  EXPECT_EQ(mismatches[1].label, "model.gguf:blk.1.ffn_up_exps.weight");
  const auto cmp = compare_models(load_model(test::preset_a_checkpoint() / "hf"), load_model(copy.file), 2);
  for (const auto& t : cmp.tensors) EXPECT_EQ(t.verdict == Verdict::Different, t.name == "layers.1.mlp1.blocks") << t.name;
}

TEST(VerifyGgufCorruption, HeaderAndTruncationAreUnreadable) {
  GgufCopy copy;
  auto b = copy.bytes();
  b[4] = 9;  // version 9
  copy.write(b);
  try {
    verify_model(copy.file, {});
    FAIL() << "GGUF version 9 was accepted";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.field(), "version");
    EXPECT_EQ(e.offset(), 4u);
    EXPECT_NE(e.message().find("unsupported GGUF version 9"), std::string::npos) << e.what();
  }
  GgufCopy cut;
  fs::resize_file(cut.file, fs::file_size(cut.file) / 2);
  try {
    verify_model(cut.file, {});
    FAIL() << "a GGUF cut in half was accepted";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.file(), cut.file.string());
    EXPECT_NE(e.message().find("truncated file"), std::string::npos) << e.what();
  }
}

TEST(VerifyGgufCorruption, MisalignedTensorOffsetIsRefusedNamingTheTensor) {
  GgufCopy copy;
  auto b = copy.bytes();
  std::string name;
  {
    const auto f = GgufFile::open(copy.file);
    const auto& t = f.tensors()[1];
    name = t.name;
    const uint64_t offset_at = t.info_offset + 8 + t.name.size() + 4 + 8 * t.ne.size() + 4;
    ASSERT_EQ(load_u64(b.data() + offset_at), t.offset);
    store_u64(b.data() + offset_at, t.offset + 16);  // no longer a multiple of general.alignment (32)
  }
  copy.write(b);
  try {
    verify_model(copy.file, {});
    FAIL() << "a misaligned tensor was accepted";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("align"), std::string::npos) << e.what();
  }
}

TEST(VerifyGgufCorruption, NonZeroPaddingIsFlagged) {
  GgufCopy copy;
  auto b = copy.bytes();
  const auto f = GgufFile::open(copy.file);
  uint64_t infos_end = 0;
  for (const auto& t : f.tensors()) infos_end = std::max(infos_end, t.info_offset + 8 + t.name.size() + 4 + 8 * t.ne.size() + 12);
  ASSERT_LT(infos_end, f.data_offset()) << "no padding before the data section to corrupt";
  b[f.data_offset() - 1] = 0xAB;
  copy.write(b);
  const auto result = verify_model(copy.file, {});
  EXPECT_TRUE(has_finding(result.report, "padding", "before the data section")) << result.report.to_table();
}

TEST(VerifyGgufCorruption, SwappedTensorNamesAreDifferentWeights) {
  GgufCopy copy;
  auto b = copy.bytes();
  // Swap the names of two same-shape tensors in the tensor-info records (name bytes follow the
  // record's u64 length).
  const std::string k = "blk.2.attn_k.weight", v = "blk.2.attn_v.weight";
  {
    const auto f = GgufFile::open(copy.file);
    const uint64_t pk = copy.tensor(f, k).info_offset + 8, pv = copy.tensor(f, v).info_offset + 8;
    ASSERT_EQ(std::string(b.begin() + static_cast<long>(pk), b.begin() + static_cast<long>(pk + k.size())), k);
    std::memcpy(b.data() + pk, v.data(), v.size());
    std::memcpy(b.data() + pv, k.data(), k.size());
  }
  copy.write(b);
  const auto cmp = compare_models(load_model(test::preset_a_checkpoint() / "hf"), load_model(copy.file), 2);
  EXPECT_EQ(count(cmp, Verdict::Different), 2u) << cmp.to_table();
}

TEST(VerifyGgufCorruption, WrongShapeIsAFinding) {
  GgufCopy copy;
  auto b = copy.bytes();
  {
    const auto f = GgufFile::open(copy.file);
    const auto& t = copy.tensor(f, "blk.3.attn_k.weight");  // ne [64, 128] -> [128, 64]: same size
    const uint64_t ne_at = t.info_offset + 8 + t.name.size() + 4;
    ASSERT_EQ(load_u64(b.data() + ne_at), 64u);
    store_u64(b.data() + ne_at, 128);
    store_u64(b.data() + ne_at + 8, 64);
  }
  copy.write(b);
  const auto result = verify_model(copy.file, {});
  EXPECT_TRUE(has_finding(result.report, "model", "")) << result.report.to_table();
  EXPECT_NE(result.report.to_table().find("attn_k"), std::string::npos) << result.report.to_table();
}

TEST(VerifyGgufCorruption, InjectedNaNIsAValueFinding) {
  GgufCopy copy;
  auto b = copy.bytes();
  {
    const auto f = GgufFile::open(copy.file);
    const auto& t = copy.tensor(f, "blk.2.attn_norm.weight");  // F32
    store_u32(b.data() + f.data_offset() + t.offset + 8, 0x7fc00000u);
  }
  copy.write(b);
  const auto result = verify_model(copy.file, {true, 2});
  EXPECT_TRUE(has_finding(result.report, "nan", "layers.2.attn_norm.weight")) << result.report.to_table();
}

// --- corruptions of a model.bin --------------------------------------------------------------

struct BinCopy {
  test::TempDir dir;
  fs::path file = dir / "model.bin";
  explicit BinCopy(const fs::path& golden) { fs::copy_file(golden, file); }
  std::vector<uint8_t> bytes() const { return test::read_file_bytes(file); }
  void write(const std::vector<uint8_t>& b) const { test::write_file_bytes(file, b); }
  modelbin::Region region(const std::string& name) const {
    for (const auto& r : modelbin::ModelBinFile::open(file).layout().write_order())
      if (r.name == name) return r.region;
    ADD_FAILURE() << "no region " << name;
    return {};
  }
};

// The FormatError verify_model throws for an unreadable file.
FormatError unreadable(const fs::path& file) {
  try {
    verify_model(file, {});
  } catch (const FormatError& e) {
    return e;
  }
  ADD_FAILURE() << file << " was readable";
  return FormatError(file.string(), "", std::nullopt, "readable");
}

TEST(VerifyModelBinCorruption, HeaderFieldsAndTruncationAreUnreadable) {
  GOLDENS_OR_SKIP();
  BinCopy uuid(*goldens / "a" / "model.bin");
  auto b = uuid.bytes();
  b[0x10] ^= 0x01;  // model UUID
  uuid.write(b);
  const auto bad_uuid = unreadable(uuid.file);
  EXPECT_EQ(bad_uuid.field(), "model_uuid");
  EXPECT_EQ(bad_uuid.offset(), 0x10u);
  EXPECT_NE(bad_uuid.message().find("expected the gpt-oss model UUID"), std::string::npos) << bad_uuid.what();
  BinCopy dims(*goldens / "a" / "model.bin");
  b = dims.bytes();
  store_u32(b.data() + 0x20 + 4, 40);  // num_blocks 4 -> 40: layout past the end of the file
  dims.write(b);
  const auto bad_dims = unreadable(dims.file);
  EXPECT_EQ(bad_dims.field(), "model_header");
  EXPECT_NE(bad_dims.message().find("past the end of the file"), std::string::npos) << bad_dims.what();
  BinCopy cut(*goldens / "a" / "model.bin");
  fs::resize_file(cut.file, fs::file_size(cut.file) - 4096);
  const auto truncated = unreadable(cut.file);
  EXPECT_EQ(truncated.field(), "model_header");
  EXPECT_NE(truncated.message().find("put the MoE weights past the end of the file"), std::string::npos) << truncated.what();
}

TEST(VerifyModelBinCorruption, WrongShapeInTheHeaderIsRefusedNamingTheSize) {
  GOLDENS_OR_SKIP();
  // model.bin has no tensor directory: every shape follows from the header, so a wrong dimension
  // (16 query heads -> 8) moves every offset and the file no longer ends where the header says.
  BinCopy copy(*goldens / "a" / "model.bin");
  auto b = copy.bytes();
  ASSERT_EQ(load_u32(b.data() + 0x20 + 32), 16u);
  store_u32(b.data() + 0x20 + 32, 8);
  copy.write(b);
  const auto e = unreadable(copy.file);
  EXPECT_EQ(e.field(), "file size");
  EXPECT_NE(e.message().find("the header describes 53925888 bytes but the file has 54466560"), std::string::npos) << e.what();
}

TEST(VerifyModelBinCorruption, DataBitFlipIsNamedByTheManifestAndBySame) {
  GOLDENS_OR_SKIP();
  BinCopy copy(*goldens / "a" / "model.bin");
  const auto before = compute_checksums(list_stored_items(copy.file), copy.dir.path(), 2);
  auto b = copy.bytes();
  b[copy.region("block 1 attention output weight").offset + 301] ^= 0x08;
  copy.write(b);
  const auto mismatches = check_manifest(before, compute_checksums(list_stored_items(copy.file), copy.dir.path(), 2));
  ASSERT_EQ(mismatches.size(), 2u);
  EXPECT_EQ(mismatches[0].label, "model.bin");
  EXPECT_EQ(mismatches[1].label, "model.bin:block 1 attention output weight");
  const auto cmp = compare_models(test::preset_a_model(), load_model(copy.file), 2);
  for (const auto& t : cmp.tensors)
    EXPECT_EQ(t.verdict == Verdict::Different, t.name == "layers.1.attn_out.weight") << t.name << ": " << t.detail;
}

TEST(VerifyModelBinCorruption, DataWrittenOffItsAlignmentShowsInThePadding) {
  GOLDENS_OR_SKIP();
  // The weights written 16 bytes later than the 16 KiB-aligned offsets the header implies (file
  // size unchanged): data lands in the zero gaps before the MoE blocks.
  BinCopy copy(*goldens / "a" / "model.bin");
  auto b = copy.bytes();
  const uint64_t start = copy.region("embedding").offset;
  b.insert(b.begin() + static_cast<long>(start), 16, 0);
  b.resize(b.size() - 16);
  copy.write(b);
  const auto result = verify_model(copy.file, {});
  const auto* f = test::find_finding(result.report, "padding", "after unembedding");
  ASSERT_NE(f, nullptr) << result.report.to_table();
  EXPECT_EQ(f->expected, "0");
  ASSERT_TRUE(f->offset.has_value());
  const uint64_t gap = copy.region("unembedding").end();  // the last 16 bytes of the unembedding moved here
  EXPECT_GE(*f->offset, gap);
  EXPECT_LT(*f->offset, gap + 16);
}

TEST(VerifyModelBinCorruption, ScaleByteBelow14IsAFindingNotAnUnreadableFile) {
  GOLDENS_OR_SKIP();
  BinCopy copy(*goldens / "a" / "model.bin");
  auto b = copy.bytes();
  const uint64_t at = copy.region("block 1 expert 2 mlp1 scales").offset + 5;
  b[at] = 3;
  copy.write(b);
  const auto result = verify_model(copy.file, {true, 2});
  const auto* f = test::find_finding(result.report, "mxfp4-scale", "expert 2 mlp1 scales");
  ASSERT_NE(f, nullptr) << result.report.to_table();
  EXPECT_EQ(f->severity, Severity::Error);
  EXPECT_EQ(f->offset, at);
  EXPECT_NE(f->message.find("below 14"), std::string::npos) << f->message;
}

TEST(VerifyModelBinCorruption, DataFlipNaNPaddingAndSwappedExperts) {
  GOLDENS_OR_SKIP();
  const auto hf = load_model(test::preset_a_checkpoint() / "hf");
  {
    BinCopy copy(*goldens / "a" / "model.bin");
    auto b = copy.bytes();
    store_u16(b.data() + copy.region("block 1 attention sinks").offset + 4, 0x7fc0);
    copy.write(b);
    const auto result = verify_model(copy.file, {true, 2});
    EXPECT_TRUE(has_finding(result.report, "nan", "layers.1.attn_sinks")) << result.report.to_table();
  }
  {
    BinCopy copy(*goldens / "a" / "model.bin");
    auto b = copy.bytes();
    const auto tokenizer_end = modelbin::ModelBinFile::open(copy.file).layout().tokenizer_end;
    b[tokenizer_end + 10] = 1;  // inside the zero padding before the weights
    copy.write(b);
    const auto result = verify_model(copy.file, {});
    EXPECT_TRUE(has_finding(result.report, "padding", "after tokenizer")) << result.report.to_table();
  }
  {
    BinCopy copy(*goldens / "a" / "model.bin");
    auto b = copy.bytes();
    const auto e0 = copy.region("block 2 expert 0 mlp2 blocks");
    const auto e1 = copy.region("block 2 expert 1 mlp2 blocks");
    std::vector<uint8_t> tmp(b.begin() + static_cast<long>(e0.offset), b.begin() + static_cast<long>(e0.end()));
    std::copy(b.begin() + static_cast<long>(e1.offset), b.begin() + static_cast<long>(e1.end()), b.begin() + static_cast<long>(e0.offset));
    std::copy(tmp.begin(), tmp.end(), b.begin() + static_cast<long>(e1.offset));
    copy.write(b);
    const auto cmp = compare_models(hf, load_model(copy.file), 2);
    ASSERT_EQ(count(cmp, Verdict::Different), 1u) << cmp.to_table();
    for (const auto& t : cmp.tensors) {
      if (t.verdict == Verdict::Different) {
        EXPECT_EQ(t.name, "layers.2.mlp2.blocks");
      }
    }
  }
}

}  // namespace
}  // namespace gptoss

namespace gptoss {
namespace {

TEST(VerifyQ8_0Corruption, CorruptBlockScaleIsAFindingAtItsOffsetAndDifferentInSame) {
  GOLDENS_OR_SKIP();
  test::TempDir dir;
  const fs::path file = dir / "model-q8_0.gguf";
  fs::copy_file(*goldens / "a" / "model-q8_0.gguf", file);
  auto b = test::read_file_bytes(file);
  uint64_t block_at = 0;
  {
    const auto f = GgufFile::open(file);
    const auto* t = f.find_tensor("blk.1.attn_v.weight");
    ASSERT_NE(t, nullptr);
    block_at = f.data_offset() + t->offset + 6 * kQ8_0BlockBytes;
  }
  store_u16(b.data() + block_at, static_cast<uint16_t>(load_u16(b.data() + block_at) | 0x8000));  // scale -d
  test::write_file_bytes(file, b);
  const auto result = verify_model(file, {true, 2});
  const auto* f = test::find_finding(result.report, "q8_0-scale", "layers.1.attn_v.weight");
  ASSERT_NE(f, nullptr) << result.report.to_table();
  EXPECT_EQ(f->offset, block_at);
  EXPECT_EQ(f->message, "1 block scales have the sign bit set (first bad block 6)");
  const auto cmp = compare_models(test::preset_a_model(), load_model(file), 2);
  for (const auto& t : cmp.tensors) {
    const bool q8 = t.dtype_b == "Q8_0";
    if (t.name == "layers.1.attn_v.weight") {
      EXPECT_EQ(t.verdict, Verdict::Different) << t.detail;
    } else {
      EXPECT_EQ(t.verdict == Verdict::LossyAsDeclared, q8) << t.name;
    }
  }
}

}  // namespace
}  // namespace gptoss

#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "formats/core/error.h"
#include "formats/safetensors/safetensors_checkpoint.h"
#include "formats/safetensors/safetensors_file.h"
#include "formats/safetensors/safetensors_writer.h"
#include "tests/test_support.h"

namespace gptoss {
namespace {

SafetensorsEntry entry(std::string name, DType dtype, std::vector<uint64_t> shape, uint8_t fill) {
  SafetensorsEntry e{std::move(name), dtype, std::move(shape), {}};
  const uint64_t size = safetensors_entry_bytes(e);
  e.data = owned_bytes(std::vector<uint8_t>(size, fill));
  return e;
}

TEST(SafetensorsWriter, CanonicalOrderAndHeaderLikeTheOfficialWriter) {
  // The spec's observed example: save_file({b_f32, a_bf16, c_u8, d_i64}, metadata={"format":"pt"}).
  std::vector<SafetensorsEntry> entries = {entry("b_f32", DType::F32, {2}, 1), entry("a_bf16", DType::BF16, {3}, 2),
                                           entry("c_u8", DType::U8, {3}, 3), entry("d_i64", DType::I64, {1}, 4)};
  test::TempDir dir;
  write_safetensors(dir / "x.safetensors", entries);
  const auto bytes = test::read_file_bytes(dir / "x.safetensors");
  const uint64_t n = load_u64(bytes.data());
  EXPECT_EQ(n, 272u);
  const std::string header(bytes.begin() + 8, bytes.begin() + 8 + static_cast<long>(n));
  EXPECT_EQ(header,
            R"({"__metadata__":{"format":"pt"},"d_i64":{"dtype":"I64","shape":[1],"data_offsets":[0,8]},)"
            R"("b_f32":{"dtype":"F32","shape":[2],"data_offsets":[8,16]},"a_bf16":{"dtype":"BF16","shape":[3],"data_offsets":[16,22]},)"
            R"("c_u8":{"dtype":"U8","shape":[3],"data_offsets":[22,25]}})" + std::string(7, ' '));
  auto st = SafetensorsFile::open(dir / "x.safetensors");
  ASSERT_EQ(st.tensors().size(), 4u);
  EXPECT_EQ(st.data(*st.find("a_bf16"))[0], 2);
  EXPECT_EQ(st.data(*st.find("d_i64")).size(), 8u);
}

TEST(SafetensorsWriter, ShardedRoundTripThroughIndex) {
  std::vector<SafetensorsEntry> entries;
  for (int i = 0; i < 10; ++i) entries.push_back(entry("t" + std::to_string(i), DType::F32, {256}, static_cast<uint8_t>(i)));
  test::TempDir dir;
  const auto files = write_sharded_safetensors(dir.path(), entries, 3000);
  ASSERT_EQ(files.size(), 5u);  // 1024-byte tensors, two per 3000-byte shard
  EXPECT_EQ(files[0], "model-00001-of-00005.safetensors");
  auto ck = SafetensorsCheckpoint::open(dir.path());
  EXPECT_TRUE(ck.has_index());
  ASSERT_EQ(ck.names().size(), 10u);
  const auto& ref = ck.get("t7");
  EXPECT_EQ(ref.file->data(*ref.tensor)[5], 7);
  std::ifstream in(dir / "model.safetensors.index.json");
  const auto index = nlohmann::json::parse(in);
  EXPECT_EQ(index["metadata"]["total_size"], 10240);
  EXPECT_EQ(index["weight_map"].size(), 10u);
}

TEST(SafetensorsCheckpoint, IndexMustMatchShards) {
  std::vector<SafetensorsEntry> entries = {entry("a", DType::U8, {4}, 1), entry("b", DType::U8, {4}, 2)};
  test::TempDir dir;
  write_sharded_safetensors(dir.path(), entries, 4);
  // Name a tensor the shards do not hold.
  std::ifstream in(dir / "model.safetensors.index.json");
  auto index = nlohmann::json::parse(in);
  index["weight_map"]["ghost"] = "model-00001-of-00002.safetensors";
  std::ofstream(dir / "model.safetensors.index.json") << index.dump();
  try {
    SafetensorsCheckpoint::open(dir.path());
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("ghost"), std::string::npos) << e.what();
  }
  index["weight_map"].erase("ghost");
  index["weight_map"]["a"] = "../escape.safetensors";
  std::ofstream(dir / "model.safetensors.index.json") << index.dump();
  EXPECT_THROW(SafetensorsCheckpoint::open(dir.path()), FormatError);
}

TEST(SafetensorsCheckpoint, FolderWithoutIndexReadsEveryFile) {
  test::TempDir dir;
  write_safetensors(dir / "model--00001-of-00002.safetensors", {entry("x", DType::U8, {2}, 9)});
  write_safetensors(dir / "model--00002-of-00002.safetensors", {entry("y", DType::U8, {2}, 8)});
  auto ck = SafetensorsCheckpoint::open(dir.path());
  EXPECT_FALSE(ck.has_index());
  EXPECT_EQ(ck.names().size(), 2u);
  write_safetensors(dir / "dup.safetensors", {entry("x", DType::U8, {2}, 9)});
  EXPECT_THROW(SafetensorsCheckpoint::open(dir.path()), FormatError);
}

}  // namespace
}  // namespace gptoss

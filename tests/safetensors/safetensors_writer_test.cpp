#include <gtest/gtest.h>

#include <fstream>
#include <map>

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

// The writer refuses, before writing anything, each header the reader would reject.
TEST(SafetensorsWriter, RefusesEveryHeaderTheReaderRejects) {
  struct Case {
    const char* what;
    std::vector<SafetensorsEntry> entries;
    std::map<std::string, std::string> metadata;
    std::string message;
  };
  SafetensorsEntry short_data = entry("short", DType::U8, {4}, 1);
  short_data.data = owned_bytes(std::vector<uint8_t>(3, 1));
  std::vector<Case> cases = {
      {"reserved name", {entry("__metadata__", DType::U8, {2}, 1)}, {{"format", "pt"}},
       "tensor \"__metadata__\": the name __metadata__ is the key of the header's metadata"},
      {"reserved name, no metadata", {entry("__metadata__", DType::U8, {2}, 1)}, {}, "no tensor can have it"},
      {"empty name", {entry("", DType::U8, {2}, 1)}, {{"format", "pt"}}, "a tensor has an empty name"},
      {"duplicate", {entry("a", DType::U8, {2}, 1), entry("a", DType::U8, {2}, 2)}, {}, "duplicate key \"a\""},
      {"dtype safetensors lacks", {SafetensorsEntry{"q", DType::Q8_0, {32}, owned_bytes(std::vector<uint8_t>(34))}}, {},
       "tensor \"q\".dtype: dtype Q8_0 has no safetensors name"},
      {"partial byte", {SafetensorsEntry{"f4", DType::F4, {3}, owned_bytes(std::vector<uint8_t>(2))}}, {},
       "tensor \"f4\".shape: 3 elements of F4 are not a whole number of bytes"},
      {"element count overflow", {SafetensorsEntry{"big", DType::U8, {1ull << 40, 1ull << 40}, owned_bytes({})}}, {},
       "tensor \"big\".shape: element count overflows 64 bits"},
      {"name not UTF-8", {entry("bad\xff", DType::U8, {2}, 1)}, {}, "is not valid UTF-8"},
      {"metadata not UTF-8", {entry("a", DType::U8, {2}, 1)}, {{"k", "\xc3"}}, "__metadata__: metadata key or value"},
      {"data of another size", {short_data}, {}, "tensor short has 3 bytes of data, its dtype and shape need 4"},
  };
  for (const auto& c : cases) {
    test::TempDir dir;
    for (const bool sharded : {false, true}) {
      try {
        if (sharded)
          write_sharded_safetensors(dir / "sharded", c.entries, 1, c.metadata);
        else
          write_safetensors(dir / "x.safetensors", c.entries, c.metadata);
        ADD_FAILURE() << c.what << ": written";
      } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << c.what << ": " << e.what();
      }
    }
    EXPECT_FALSE(std::filesystem::exists(dir / "x.safetensors")) << c.what;
    EXPECT_TRUE(!std::filesystem::exists(dir / "sharded") || std::filesystem::is_empty(dir / "sharded")) << c.what;
  }
}

// The offset and size rules, as the one function the reader and the writer share applies them.
TEST(SafetensorsHeaderRules, OffsetsSizesAndCoverage) {
  auto check = [](std::vector<SafetensorsTensor> tensors, uint64_t data_bytes) {
    const auto broken = check_safetensors_header(tensors, {}, data_bytes);
    return broken ? broken->field + ": " + broken->message : std::string("ok");
  };
  auto u8 = [](std::string name, uint64_t begin, uint64_t end) {
    return SafetensorsTensor{std::move(name), DType::U8, {end - begin}, begin, end};
  };
  EXPECT_EQ(check({u8("a", 0, 4), u8("b", 4, 8)}, 8), "ok");
  EXPECT_EQ(check({u8("b", 4, 8), u8("a", 0, 4)}, 8), "ok");  // any order: sorted by offsets
  EXPECT_EQ(check({u8("a", 0, 4), u8("b", 2, 6)}, 6),
            "tensor \"b\".data_offsets: offsets [2, 6] must start at 4 (no gaps or overlaps)");
  EXPECT_EQ(check({u8("a", 0, 4), u8("b", 5, 9)}, 9),
            "tensor \"b\".data_offsets: offsets [5, 9] must start at 4 (no gaps or overlaps)");
  EXPECT_EQ(check({u8("a", 1, 4)}, 4), "tensor \"a\".data_offsets: offsets [1, 4] must start at 0 (no gaps or overlaps)");
  EXPECT_EQ(check({SafetensorsTensor{"a", DType::F32, {2}, 0, 4}}, 4),
            "tensor \"a\".data_offsets: holds 4 bytes but F32 of this shape needs 8");
  EXPECT_EQ(check({u8("a", 0, 4)}, 5), "data section: tensors cover 4 bytes but the data section has 5 (truncated "
                                       "file or trailing bytes)");
  EXPECT_EQ(check({u8("a", 0, 0), u8("b", 0, 0)}, 0), "ok");  // zero-size tensors may share an offset
  std::vector<SafetensorsTensor> unsorted = {u8("b", 4, 8), u8("a", 0, 4)};
  ASSERT_FALSE(check_safetensors_header(unsorted, {}, 8));
  EXPECT_EQ(unsorted[0].name, "a");
}

// Whatever the writer emits, the reader accepts and reads back as written: every dtype
// safetensors has, scalars, empty and odd shapes, names that need escaping, one file or shards.
TEST(SafetensorsWriter, EverythingWrittenReadsBack) {
  const std::vector<DType> dtypes = {DType::BOOL, DType::F4, DType::F6_E2M3, DType::F6_E3M2, DType::U8, DType::I8,
                                     DType::F8_E5M2, DType::F8_E4M3, DType::E8M0, DType::F8_E4M3FNUZ,
                                     DType::F8_E5M2FNUZ, DType::I16, DType::U16, DType::F16, DType::BF16, DType::I32,
                                     DType::U32, DType::F32, DType::C64, DType::F64, DType::I64, DType::U64};
  const std::vector<std::string> names = {"w", "layers.0.mlp1.blocks", "quote\"back\\slash", "tab\tnew\nline",
                                          "\x01control", "unicode \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80",
                                          "__metadata", "{}", " "};
  uint32_t state = 12345;
  auto next = [&](uint32_t bound) {
    state = state * 1664525u + 1013904223u;
    return (state >> 8) % bound;
  };
  for (int round = 0; round < 40; ++round) {
    std::vector<SafetensorsEntry> entries;
    const uint32_t count = next(12);
    for (uint32_t i = 0; i < count; ++i) {
      const DType dtype = dtypes[next(static_cast<uint32_t>(dtypes.size()))];
      std::vector<uint64_t> shape(next(4));
      for (auto& d : shape) d = next(5);
      // Whole bytes for the sub-byte dtypes: pad the element count to a whole block.
      const uint64_t block = dtype_info(dtype).block_elements;
      uint64_t n = 1;
      for (auto d : shape) n *= d;
      if (n % block) shape.push_back(block);
      auto e = entry(names[next(static_cast<uint32_t>(names.size()))] + "_" + std::to_string(i), dtype, shape,
                     static_cast<uint8_t>(i + 1));
      entries.push_back(std::move(e));
    }
    const std::map<std::string, std::string> metadata =
        round % 3 == 0 ? std::map<std::string, std::string>{}
                       : std::map<std::string, std::string>{{"format", "pt"}, {"note \xc3\xa9", "\"x\"\n"}};
    test::TempDir dir;
    write_safetensors(dir / "one.safetensors", entries, metadata);
    const auto one = SafetensorsFile::open(dir / "one.safetensors");
    ASSERT_EQ(one.tensors().size(), entries.size()) << "round " << round;
    EXPECT_EQ(one.metadata(), metadata);
    for (const auto& e : entries) {
      const auto* t = one.find(e.name);
      ASSERT_NE(t, nullptr) << e.name;
      EXPECT_EQ(t->dtype, e.dtype) << e.name;
      EXPECT_EQ(t->shape, e.shape) << e.name;
      const auto data = one.data(*t);
      std::vector<uint8_t> expected(e.data->size());
      e.data->read(0, expected);
      EXPECT_TRUE(std::equal(data.begin(), data.end(), expected.begin(), expected.end())) << e.name;
    }
    write_sharded_safetensors(dir / "sharded", entries, 1 + next(64), metadata);
    const auto ck = SafetensorsCheckpoint::open(dir / "sharded");
    EXPECT_EQ(ck.names().size(), entries.size()) << "round " << round;
  }
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

// The GGUF container: one crafted bad file per reader check (each with its expected error), the
// writer/reader round trip of every value type, and truncation / byte flips never crashing.
#include <algorithm>
#include <bit>
#include <cstring>
#include <functional>

#include "formats/core/checked_math.h"
#include "formats/core/error.h"
#include "formats/gguf/gguf_file.h"
#include "formats/gguf/gguf_split.h"
#include "formats/gguf/gguf_writer.h"
#include "tests/test_support.h"

namespace gptoss::test {
namespace {

struct Bytes {
  std::vector<uint8_t> b;
  void u32(uint32_t v) { for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i))); }
  void u64(uint64_t v) { for (int i = 0; i < 8; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i))); }
  void str(const std::string& s) { u64(s.size()); b.insert(b.end(), s.begin(), s.end()); }
};

struct TensorSpec {
  std::string name;
  std::vector<uint64_t> ne;
  uint32_t type;
  uint64_t offset;
};

// A small GGUF described field by field, so each test can break exactly one thing.
struct Crafted {
  uint32_t magic = kGgufMagic;
  uint32_t version = 3;
  std::optional<uint64_t> tensor_count, kv_count;
  std::vector<std::function<void(Bytes&)>> kvs = {
      [](Bytes& o) { o.str("general.architecture"); o.u32(8); o.str("test"); },
      [](Bytes& o) { o.str("numbers"); o.u32(9); o.u32(4); o.u64(3); o.u32(1); o.u32(2); o.u32(3); },
  };
  std::vector<TensorSpec> tensors = {{"a", {8}, 0, 0}, {"b", {32, 2}, 8, 32}};  // F32 32 B, Q8_0 68 B
  uint64_t data_bytes = 32 + 96;
  uint32_t alignment = 32;

  std::vector<uint8_t> build() const {
    Bytes o;
    o.u32(magic);
    o.u32(version);
    o.u64(tensor_count.value_or(tensors.size()));
    o.u64(kv_count.value_or(kvs.size()));
    for (const auto& kv : kvs) kv(o);
    for (const auto& t : tensors) {
      o.str(t.name);
      o.u32(static_cast<uint32_t>(t.ne.size()));
      for (uint64_t d : t.ne) o.u64(d);
      o.u32(t.type);
      o.u64(t.offset);
    }
    while (o.b.size() % alignment) o.b.push_back(0);
    for (uint64_t i = 0; i < data_bytes; ++i) o.b.push_back(static_cast<uint8_t>(i * 7));
    return o.b;
  }
};

GgufFile parse(const std::vector<uint8_t>& bytes) { return GgufFile::parse(MappedFile::from_bytes(bytes, "crafted.gguf")); }

// Parses and expects a FormatError whose field contains `field` and message contains `message`.
void expect_error(const Crafted& c, const std::string& field, const std::string& message) {
  try {
    parse(c.build());
    ADD_FAILURE() << "no error; expected " << field << ": " << message;
  } catch (const FormatError& e) {
    EXPECT_NE(e.field().find(field), std::string::npos) << e.what();
    EXPECT_NE(e.message().find(message), std::string::npos) << e.what();
    EXPECT_EQ(e.file(), "crafted.gguf");
    EXPECT_TRUE(e.offset().has_value()) << e.what();
  }
}

TEST(GgufReader, ParsesTheCraftedFile) {
  const GgufFile f = parse(Crafted().build());
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  ASSERT_EQ(f.kvs().size(), 2u);
  EXPECT_EQ(f.require("general.architecture", GgufType::String).string, "test");
  const GgufValue& numbers = f.require("numbers", GgufType::Array);
  EXPECT_EQ(numbers.element_type, GgufType::U32);
  ASSERT_EQ(numbers.count, 3u);
  EXPECT_EQ(numbers.element_bits(2), 3u);
  ASSERT_EQ(f.tensors().size(), 2u);
  const GgufTensorInfo& b = *f.find_tensor("b");
  EXPECT_EQ(b.dtype, DType::Q8_0);
  EXPECT_EQ(b.size, 68u);
  EXPECT_EQ(b.offset, 32u);
  EXPECT_EQ(b.shape(), (std::vector<uint64_t>{2, 32}));
  EXPECT_EQ(f.data_offset() % 32, 0u);
  EXPECT_EQ(f.data(b)[0], static_cast<uint8_t>(32 * 7));
  EXPECT_THROW(f.require("numbers", GgufType::U32), FormatError);  // wrong type named
  EXPECT_THROW(f.require("missing", GgufType::U32), FormatError);
}

TEST(GgufReader, RejectsBadMagic) { Crafted c; c.magic = 0x46554746; expect_error(c, "magic", "not a GGUF file"); }
TEST(GgufReader, RejectsVersion1) { Crafted c; c.version = 1; expect_error(c, "version", "unsupported GGUF version 1"); }
TEST(GgufReader, RejectsVersion0) { Crafted c; c.version = 0; expect_error(c, "version", "unsupported GGUF version 0 (2 and 3 are supported)"); }
TEST(GgufReader, RejectsVersion4) { Crafted c; c.version = 4; expect_error(c, "version", "unsupported GGUF version 4 (2 and 3 are supported)"); }
TEST(GgufReader, RejectsByteSwappedVersion) { Crafted c; c.version = 0x03000000; expect_error(c, "version", "byte-swapped"); }
TEST(GgufReader, RejectsHugeTensorCount) { Crafted c; c.tensor_count = 1ull << 40; expect_error(c, "tensor_count", "cannot fit"); }
TEST(GgufReader, RejectsHugeKvCount) { Crafted c; c.kv_count = 1ull << 60; expect_error(c, "kv_count", "cannot fit"); }

TEST(GgufReader, RejectsStringLongerThanTheLimit) {
  Crafted c;
  c.kvs[0] = [](Bytes& o) { o.u64(1ull << 31); };
  expect_error(c, "kv[0].key length", "exceeds the 2^30-byte limit");
}
TEST(GgufReader, RejectsStringRunningPastTheEnd) {
  Crafted c;
  c.kvs[1] = [](Bytes& o) { o.str("numbers"); o.u32(8); o.u64(100000); };
  expect_error(c, "numbers length", "runs past the end of the file");
}
TEST(GgufReader, RejectsUnknownValueType) {
  Crafted c;
  c.kvs[1] = [](Bytes& o) { o.str("numbers"); o.u32(13); o.u32(0); };
  expect_error(c, "numbers type", "unknown value type 13");
}
TEST(GgufReader, RejectsUnknownArrayElementType) {
  Crafted c;
  c.kvs[1] = [](Bytes& o) { o.str("numbers"); o.u32(9); o.u32(77); o.u64(0); };
  expect_error(c, "numbers element type", "unknown value type 77");
}
TEST(GgufReader, RejectsNestedArrays) {
  Crafted c;
  c.kvs[1] = [](Bytes& o) { o.str("numbers"); o.u32(9); o.u32(9); o.u64(1); };
  expect_error(c, "numbers element type", "nested arrays are not supported");
}
TEST(GgufReader, RejectsHugeArrayCount) {
  Crafted c;
  c.kvs[1] = [](Bytes& o) { o.str("numbers"); o.u32(9); o.u32(4); o.u64(1ull << 31); };
  expect_error(c, "numbers count", "exceeds the 2^30 limit");
}
TEST(GgufReader, RejectsArrayLargerThanTheFile) {
  Crafted c;
  c.kvs[1] = [](Bytes& o) { o.str("numbers"); o.u32(9); o.u32(8); o.u64(1u << 20); };
  expect_error(c, "numbers count", "cannot fit");
}
TEST(GgufReader, RejectsEmptyKey) {
  Crafted c;
  c.kvs[1] = [](Bytes& o) { o.str(""); o.u32(4); o.u32(1); };
  expect_error(c, "kv[1].key", "empty key");
}
TEST(GgufReader, RejectsDuplicateKey) {
  Crafted c;
  c.kvs[1] = [](Bytes& o) { o.str("general.architecture"); o.u32(4); o.u32(1); };
  expect_error(c, "general.architecture", "duplicate key");
}
TEST(GgufReader, RejectsAlignmentOfTheWrongType) {
  Crafted c;
  c.kvs.push_back([](Bytes& o) { o.str("general.alignment"); o.u32(10); o.u64(32); });
  expect_error(c, "general.alignment", "must be UINT32");
}
TEST(GgufReader, RejectsAlignmentThatIsNotAPowerOfTwo) {
  Crafted c;
  c.kvs.push_back([](Bytes& o) { o.str("general.alignment"); o.u32(4); o.u32(48); });
  expect_error(c, "general.alignment", "48 is not a power of two");
}
TEST(GgufReader, HonoursACustomAlignment) {
  Crafted c;
  c.kvs.push_back([](Bytes& o) { o.str("general.alignment"); o.u32(4); o.u32(64); });
  c.alignment = 64;
  c.tensors[1].offset = 64;
  c.data_bytes = 64 + 128;
  const GgufFile f = parse(c.build());
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(f.data_offset() % 64, 0u);
}
TEST(GgufReader, RejectsEmptyTensorName) { Crafted c; c.tensors[0].name = ""; expect_error(c, "tensor[0].name", "empty tensor name"); }
TEST(GgufReader, RejectsTensorNameOf64Bytes) {
  Crafted c;
  c.tensors[0].name = std::string(64, 'x');
  expect_error(c, std::string(64, 'x'), "longer than ggml's 63");
}
TEST(GgufReader, RejectsDuplicateTensorName) { Crafted c; c.tensors[1].name = "a"; expect_error(c, "a", "duplicate tensor name"); }
TEST(GgufReader, RejectsFiveDimensions) { Crafted c; c.tensors[0].ne = {8, 1, 1, 1, 1}; expect_error(c, "a n_dims", "5 dimensions"); }
TEST(GgufReader, RejectsZeroDimensions) { Crafted c; c.tensors[0].ne = {}; expect_error(c, "a n_dims", "0 dimensions"); }
TEST(GgufReader, RejectsNegativeDimension) { Crafted c; c.tensors[0].ne = {1ull << 63}; expect_error(c, "a ne[0]", "negative"); }
TEST(GgufReader, RejectsElementCountOverflow) {
  Crafted c;
  c.tensors[0].ne = {1ull << 32, 1ull << 32};
  expect_error(c, "a ne[1]", "overflows int64");
}
TEST(GgufReader, RejectsUnknownGgmlType) { Crafted c; c.tensors[0].type = 4; expect_error(c, "a type", "unknown ggml type 4"); }
TEST(GgufReader, RejectsPartialBlock) {
  Crafted c;
  c.tensors[1].ne = {16, 2};
  expect_error(c, "b ne[0]", "not a multiple of the Q8_0 block size 32");
}
// Every block type: a row width that is not a whole number of blocks is refused, naming the
// tensor, its ne[0] field (at that field's own byte offset), the type and its block size.
TEST(GgufReader, RejectsPartialBlockOfEveryBlockType) {
  for (int i = 0; i < kDTypeCount; ++i) {
    const DTypeInfo& info = dtype_info(static_cast<DType>(i));
    if (info.ggml_type < 0 || info.block_elements == 1) continue;
    Crafted c;
    c.tensors[1].type = static_cast<uint32_t>(info.ggml_type);
    c.tensors[1].ne = {info.block_elements / 2, 2};
    const std::vector<uint8_t> bytes = c.build();
    // The record of "b": name length 1, "b", n_dims 2, then ne[0].
    const uint8_t record[] = {1, 0, 0, 0, 0, 0, 0, 0, 'b', 2, 0, 0, 0};
    const auto at = std::search(bytes.begin(), bytes.end(), std::begin(record), std::end(record));
    ASSERT_NE(at, bytes.end());
    const uint64_t ne0_offset = static_cast<uint64_t>(at - bytes.begin()) + sizeof record;
    try {
      parse(bytes);
      ADD_FAILURE() << info.name << ": no error";
    } catch (const FormatError& e) {
      EXPECT_EQ(e.field(), "b ne[0]") << info.name;
      EXPECT_EQ(e.offset(), ne0_offset) << info.name;
      EXPECT_NE(e.message().find("row width ne[0] = " + std::to_string(info.block_elements / 2) + " is not a multiple of the " +
                                 std::string(info.name) + " block size " + std::to_string(info.block_elements)),
                std::string::npos)
          << e.what();
    }
  }
}
TEST(GgufReader, RejectsUnalignedOffset) { Crafted c; c.tensors[1].offset = 33; expect_error(c, "b offset", "not a multiple of the alignment 32"); }
TEST(GgufReader, RejectsOverlappingTensors) { Crafted c; c.tensors[1].offset = 0; expect_error(c, "b offset", "expected 32"); }
TEST(GgufReader, RejectsGapsAndOutOfOrderData) { Crafted c; c.tensors[1].offset = 64; expect_error(c, "b offset", "expected 32"); }
TEST(GgufReader, RejectsOffsetPastTheFile) {
  Crafted c;
  c.tensors = {{"a", {8}, 0, 1ull << 62}};
  expect_error(c, "a offset", "expected 0");
}
TEST(GgufReader, RejectsTruncatedData) { Crafted c; c.data_bytes = 32 + 60; expect_error(c, "b data", "truncated file"); }

TEST(GgufReader, EveryTruncationIsAnErrorOrAValidParse) {
  const auto bytes = Crafted().build();
  const uint64_t data_end = bytes.size() - (96 - 68);  // the last tensor's padding may go
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    if (n < data_end) {
      EXPECT_THROW(parse(cut), FormatError) << "cut at " << n;
    } else {
      EXPECT_NO_THROW(parse(cut)) << "cut at " << n;
    }
  }
}

TEST(GgufReader, FlippingAnyHeaderByteIsAnErrorOrAValidParse) {
  const auto bytes = Crafted().build();
  const uint64_t data_offset = parse(bytes).data_offset();
  uint64_t errors = 0, valid = 0;
  for (uint64_t i = 0; i < data_offset; ++i)
    for (unsigned mask : {0x01u, 0x80u, 0xFFu}) {
      auto flipped = bytes;
      flipped[i] = static_cast<uint8_t>(flipped[i] ^ mask);
      try {
        const GgufFile f = parse(flipped);
        for (const auto& t : f.tensors()) ASSERT_LE(f.data_offset() + t.offset + t.size, flipped.size());
        ++valid;
      } catch (const FormatError&) {
        ++errors;
      }
    }
  EXPECT_GT(errors, 0u);
  EXPECT_GT(valid, 0u);  // e.g. bytes inside a string value
}

TEST(GgufWriter, EveryValueTypeRoundTrips) {
  TempDir tmp;
  GgufMetadata md;
  md.add_u8("u8", 200);
  md.add_i8("i8", -5);
  md.add_u16("u16", 65000);
  md.add_i16("i16", -30000);
  md.add_u32("u32", 4000000000u);
  md.add_i32("i32", -2000000000);
  md.add_f32("f32", 1e-5f);
  md.add_bool("bool", true);
  md.add_string("string", "héllo");
  md.add_u64("u64", 1ull << 60);
  md.add_i64("i64", -(1ll << 60));
  md.add_f64("f64", 0.1);
  md.add_i32_array("i32s", std::vector<int32_t>{1, -2, 3});
  md.add_string_array("strings", {"a", "", "c c"});
  std::vector<uint8_t> f32s(8);
  store_u32(&f32s[0], std::bit_cast<uint32_t>(1.5f));
  store_u32(&f32s[4], std::bit_cast<uint32_t>(-2.0f));
  md.add_array("f32s", GgufType::F32, f32s);
  EXPECT_THROW(md.add_u32("u8", 1), std::invalid_argument);

  std::vector<GgufTensorEntry> tensors;
  for (int i = 0; i < 3; ++i) {
    GgufTensorEntry e;
    e.name = "t" + std::to_string(i);
    e.ggml_type = i == 1 ? 8u : 0u;  // F32, Q8_0, F32
    e.ne = i == 1 ? std::vector<uint64_t>{32, 3} : std::vector<uint64_t>{5};
    const uint64_t size = gguf_tensor_bytes(e);
    std::vector<uint8_t> bytes(size);
    for (uint64_t k = 0; k < size; ++k) bytes[k] = static_cast<uint8_t>(k + static_cast<uint64_t>(i));
    e.data = owned_bytes(std::move(bytes));
    tensors.push_back(std::move(e));
  }
  write_gguf(tmp / "all.gguf", md, tensors);
  const GgufFile f = GgufFile::open(tmp / "all.gguf");
  EXPECT_EQ(f.kvs().size(), md.count());
  EXPECT_EQ(*f.require("u8", GgufType::U8).as_number(), 200);
  EXPECT_EQ(*f.require("i8", GgufType::I8).as_number(), -5);
  EXPECT_EQ(*f.require("u16", GgufType::U16).as_number(), 65000);
  EXPECT_EQ(*f.require("i16", GgufType::I16).as_number(), -30000);
  EXPECT_EQ(*f.require("u32", GgufType::U32).as_number(), 4000000000.0);
  EXPECT_EQ(*f.require("i32", GgufType::I32).as_number(), -2000000000);
  EXPECT_EQ(*f.require("f32", GgufType::F32).as_number(), static_cast<double>(1e-5f));
  EXPECT_EQ(*f.require("bool", GgufType::Bool).as_number(), 1);
  EXPECT_EQ(f.require("string", GgufType::String).string, "héllo");
  EXPECT_EQ(f.require("u64", GgufType::U64).bits, 1ull << 60);
  EXPECT_EQ(static_cast<int64_t>(f.require("i64", GgufType::I64).bits), -(1ll << 60));
  EXPECT_EQ(*f.require("f64", GgufType::F64).as_number(), 0.1);
  const GgufValue& i32s = f.require("i32s", GgufType::Array);
  EXPECT_EQ(i32s.element_type, GgufType::I32);
  EXPECT_EQ(static_cast<int32_t>(i32s.element_bits(1)), -2);
  const GgufValue& strings = f.require("strings", GgufType::Array);
  EXPECT_EQ(strings.strings, (std::vector<std::string_view>{"a", "", "c c"}));
  EXPECT_EQ(std::bit_cast<float>(static_cast<uint32_t>(f.require("f32s", GgufType::Array).element_bits(1))), -2.0f);
  // Tensor layout: offsets are the running aligned sizes, padding after every tensor, data intact.
  ASSERT_EQ(f.tensors().size(), 3u);
  EXPECT_EQ(f.tensors()[0].offset, 0u);
  EXPECT_EQ(f.tensors()[1].offset, 32u);
  EXPECT_EQ(f.tensors()[2].offset, 32u + 128u);
  EXPECT_EQ(f.data_offset() + 32 + 128 + 32, std::filesystem::file_size(tmp / "all.gguf"));
  EXPECT_EQ(f.data(f.tensors()[2])[3], 5);

  // Re-serializing the values read gives the same metadata bytes.
  GgufMetadata copy;
  for (const auto& kv : f.kvs()) copy.add_value(kv.key, kv.value);
  EXPECT_EQ(copy.bytes(), md.bytes());
}

TEST(GgufWriter, RejectsLongNamesAndShortData) {
  TempDir tmp;
  GgufTensorEntry e;
  e.name = std::string(64, 'n');
  e.ggml_type = 0;
  e.ne = {4};
  e.data = owned_bytes(std::vector<uint8_t>(16));
  EXPECT_THROW(write_gguf(tmp / "x.gguf", GgufMetadata(), {e}), std::invalid_argument);
  e.name = "short";
  e.data = owned_bytes(std::vector<uint8_t>(12));
  EXPECT_THROW(write_gguf(tmp / "x.gguf", GgufMetadata(), {e}), std::invalid_argument);
  EXPECT_FALSE(std::filesystem::exists(tmp / "x.gguf"));  // nothing half-written
}

TEST(GgufTensorInfo, RecordSizeIsTheOneFormula) {
  // Name length, name, n_dims, one u64 per dimension, type, offset.
  EXPECT_EQ(gguf_tensor_info_bytes(0, 0), 24u);
  EXPECT_EQ(gguf_tensor_info_bytes(1, 1), 33u);  // the smallest record a file can hold
  EXPECT_EQ(gguf_tensor_info_bytes(63, 4), 8u + 63 + 4 + 32 + 4 + 8);
  // Against the bytes the writer lays out: records back to back, each ending in its data offset,
  // the last one followed by padding up to the data section.
  TempDir tmp;
  std::vector<GgufTensorEntry> tensors;
  const std::vector<std::pair<std::string, std::vector<uint64_t>>> shapes = {
      {"a", {8}}, {"a much longer tensor name", {4, 2}}, {"c", {2, 2, 2}}, {std::string(63, 'd'), {2, 1, 2, 2}}};
  for (const auto& [name, ne] : shapes) {
    GgufTensorEntry e;
    e.name = name;
    e.ggml_type = 0;  // F32
    e.ne = ne;
    e.data = owned_bytes(std::vector<uint8_t>(gguf_tensor_bytes(e)));
    tensors.push_back(std::move(e));
  }
  GgufMetadata md;
  md.add_string("general.architecture", "test");
  write_gguf(tmp / "x.gguf", md, tensors);
  const auto f = GgufFile::open(tmp / "x.gguf");
  const auto bytes = read_file_bytes(tmp / "x.gguf");
  ASSERT_EQ(f.tensors().size(), shapes.size());
  for (size_t i = 0; i < f.tensors().size(); ++i) {
    const auto& t = f.tensors()[i];
    EXPECT_EQ(t.info_end() - t.info_offset, gguf_tensor_info_bytes(t.name.size(), t.ne.size()));
    EXPECT_EQ(load_u64(bytes.data() + t.offset_field()), t.offset) << t.name;
    if (i + 1 < f.tensors().size()) {
      EXPECT_EQ(t.info_end(), f.tensors()[i + 1].info_offset) << t.name;
    }
  }
  EXPECT_EQ(align_up(f.tensors().back().info_end(), f.alignment()), f.data_offset());
}

TEST(GgufSplitFiles, MismatchedShardsAreRejected) {
  TempDir tmp;
  GgufMetadata md;
  md.add_string("general.architecture", "test");
  std::vector<GgufTensorEntry> tensors;
  for (int i = 0; i < 3; ++i) {
    GgufTensorEntry e;
    e.name = "t" + std::to_string(i);
    e.ggml_type = 0;
    e.ne = {64};
    e.data = owned_bytes(std::vector<uint8_t>(256));
    tensors.push_back(std::move(e));
  }
  const auto names = write_gguf_split(tmp / "m.gguf", md, tensors, 256);
  ASSERT_EQ(names, (std::vector<std::string>{"m-00001-of-00003.gguf", "m-00002-of-00003.gguf", "m-00003-of-00003.gguf"}));
  const GgufModelFiles set = GgufModelFiles::open(tmp / "m-00003-of-00003.gguf");
  EXPECT_EQ(set.tensors().size(), 3u);
  EXPECT_EQ(set.metadata().require("general.architecture", GgufType::String).string, "test");
  // Out of order, or one missing: named errors.
  std::vector<GgufFile> wrong = {GgufFile::open(tmp / names[1]), GgufFile::open(tmp / names[0]), GgufFile::open(tmp / names[2])};
  EXPECT_THROW(GgufModelFiles::from_files(wrong), FormatError);
  std::filesystem::remove(tmp / names[1]);
  try {
    GgufModelFiles::open(tmp / names[0]);
    ADD_FAILURE() << "missing shard not noticed";
  } catch (const FormatError& e) {
    EXPECT_NE(e.message().find("m-00002-of-00003.gguf"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gptoss::test

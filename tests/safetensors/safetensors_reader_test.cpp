// One test per validation rule of the official safetensors reader (shared/specs/safetensors_hf.md
// section 1.4), plus our stricter rules, each with a crafted file and the expected error.
#include <gtest/gtest.h>

#include <cstring>

#include "formats/core/error.h"
#include "formats/core/mapped_file.h"
#include "formats/safetensors/safetensors_file.h"

namespace gptoss {
namespace {

std::vector<uint8_t> image(const std::string& header, size_t data_bytes, std::optional<uint64_t> n = {}) {
  std::vector<uint8_t> out(8 + header.size() + data_bytes, 0);
  store_u64(out.data(), n.value_or(header.size()));
  std::memcpy(out.data() + 8, header.data(), header.size());
  for (size_t i = 0; i < data_bytes; ++i) out[8 + header.size() + i] = static_cast<uint8_t>(i);
  return out;
}

SafetensorsFile parse(std::vector<uint8_t> bytes) { return SafetensorsFile::parse(MappedFile::from_bytes(std::move(bytes), "t.safetensors")); }

// Expects a FormatError whose text contains `needle`.
void expect_error(std::vector<uint8_t> bytes, const std::string& needle) {
  try {
    parse(std::move(bytes));
    FAIL() << "expected an error containing \"" << needle << "\"";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_EQ(e.file(), "t.safetensors");
  }
}

const std::string kOne = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";

TEST(SafetensorsReader, ValidFileParses) {
  auto st = parse(image(kOne, 8));
  ASSERT_EQ(st.tensors().size(), 1u);
  EXPECT_EQ(st.tensors()[0].name, "a");
  EXPECT_EQ(st.tensors()[0].dtype, DType::F32);
  EXPECT_EQ(st.data(st.tensors()[0]).size(), 8u);
  EXPECT_EQ(st.data(st.tensors()[0])[1], 1);
}

TEST(SafetensorsReader, Rule1_TooSmall) { expect_error({1, 2, 3}, "shorter than the 8-byte header length"); }

TEST(SafetensorsReader, Rule2_HeaderTooLarge) {
  expect_error(image(kOne, 8, 100'000'001), "exceeds the 100000000-byte limit");
}

TEST(SafetensorsReader, Rule3_HeaderPastEnd) { expect_error(image(kOne, 0, 1000), "runs past the end of the file"); }

TEST(SafetensorsReader, Rule3_HugeHeaderLengthDoesNotOverflow) {
  expect_error(image(kOne, 8, ~0ull), "exceeds");
}

TEST(SafetensorsReader, Rule4_ByteOrderMarkRejected) {
  expect_error(image("\xEF\xBB\xBF" + kOne, 8), "byte-order mark");
}

TEST(SafetensorsReader, Rule4_InvalidUtf8Rejected) {
  expect_error(image(R"({"a\xff":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8), "invalid JSON");
}

TEST(SafetensorsReader, Rule5_WhitespaceAroundObjectAccepted) {
  EXPECT_NO_THROW(parse(image(" \n\t" + kOne + "   ", 8)));
}

TEST(SafetensorsReader, Rule5_TrailingGarbageAndNulPaddingRejected) {
  expect_error(image(kOne + "x", 8), "invalid JSON");
  expect_error(image(kOne + std::string(3, '\0'), 8), "invalid JSON");
}

TEST(SafetensorsReader, Rule5_TopLevelMustBeObject) { expect_error(image("[1,2]", 0), "must be a JSON object"); }

TEST(SafetensorsReader, Rule6_FieldTypes) {
  expect_error(image(R"({"a":{"dtype":"F32","shape":[2]}})", 8), "missing field \"data_offsets\"");
  expect_error(image(R"({"a":{"dtype":"f32","shape":[2],"data_offsets":[0,8]}})", 8), "unknown dtype \"f32\"");
  expect_error(image(R"({"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", 8), "non-negative integers");
  expect_error(image(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8), "non-negative integers");
  expect_error(image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8,8]}})", 8), "exactly 2 integers");
  expect_error(image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0.0,8]}})", 8), "non-negative integers");
}

TEST(SafetensorsReader, Rule7_DuplicateNamesRejected) {
  expect_error(image(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", 1),
               "duplicate key \"a\"");
}

TEST(SafetensorsReader, Metadata) {
  auto st = parse(image(R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8));
  EXPECT_EQ(st.metadata().at("format"), "pt");
  EXPECT_NO_THROW(parse(image(R"({"__metadata__":null})", 0)));
  expect_error(image(R"({"__metadata__":{"x":1}})", 0), "value must be a string");
  expect_error(image(R"({"__metadata__":{"x":"1","x":"2"}})", 0), "duplicate key \"__metadata__.x\"");
}

TEST(SafetensorsReader, Rule9_OffsetsMustBeContiguousFromZero) {
  expect_error(image(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})", 2), "must start at 0");
  expect_error(image(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}})", 3),
               "must start at 2");
  expect_error(image(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"U8","shape":[1],"data_offsets":[2,3]}})", 3),
               "must start at 1");
  expect_error(image(R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[3,1]}})", 3), "must start at 0");
}

TEST(SafetensorsReader, Rule9_KeyOrderDoesNotMatterAndEmptyTensorsShareOffsets) {
  auto st = parse(image(
      R"({"b":{"dtype":"U8","shape":[1],"data_offsets":[1,2]},"z":{"dtype":"F32","shape":[0],"data_offsets":[1,1]},"y":{"dtype":"F32","shape":[0,4],"data_offsets":[1,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})",
      2));
  ASSERT_EQ(st.tensors().size(), 4u);
  EXPECT_EQ(st.tensors()[0].name, "a");
  EXPECT_EQ(st.tensors()[3].name, "b");
}

TEST(SafetensorsReader, Rule10_ElementCountOverflow) {
  expect_error(image(R"({"a":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,1]}})", 1), "overflows 64 bits");
}

TEST(SafetensorsReader, Rule11_SubByteTypesNeedWholeBytes) {
  expect_error(image(R"({"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}})", 2), "not a whole number of bytes");
  EXPECT_NO_THROW(parse(image(R"({"a":{"dtype":"F4","shape":[4],"data_offsets":[0,2]}})", 2)));
}

TEST(SafetensorsReader, Rule12_SizeMustMatchShape) {
  expect_error(image(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8), "needs 12");
}

TEST(SafetensorsReader, Rule13_NoTrailingBytesNoTruncation) {
  expect_error(image(kOne, 9), "trailing bytes");
  auto bytes = image(kOne, 8);
  bytes.pop_back();
  expect_error(bytes, "truncated");
}

TEST(SafetensorsReader, EmptyHeaderIsAValidFile) {
  auto st = parse(image("{}", 0));
  EXPECT_TRUE(st.tensors().empty());
  auto odd = parse(image(R"({"a":{"dtype":"U8","shape":[3],"data_offsets":[0,3]}} )", 3));  // no 8-byte alignment needed
  EXPECT_EQ(odd.tensors().size(), 1u);
}

TEST(SafetensorsReader, EveryTruncationIsAnErrorNeverACrash) {
  const auto full = image(R"({"__metadata__":{"format":"pt"},"w":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]},"b":{"dtype":"U8","shape":[5],"data_offsets":[12,17]}})", 17);
  for (size_t len = 0; len < full.size(); ++len) {
    std::vector<uint8_t> cut(full.begin(), full.begin() + static_cast<long>(len));
    EXPECT_THROW(parse(cut), FormatError) << "length " << len;
  }
  EXPECT_NO_THROW(parse(full));
}

TEST(SafetensorsReader, EveryHeaderByteFlipIsHandled) {
  const auto full = image(R"({"w":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]},"b":{"dtype":"U8","shape":[5],"data_offsets":[12,17]}})", 17);
  size_t rejected = 0;
  const size_t header_end = full.size() - 17;
  for (size_t i = 0; i < header_end; ++i)
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
      auto bad = full;
      bad[i] ^= mask;
      try {
        auto st = parse(bad);
        for (const auto& t : st.tensors()) ASSERT_LE(t.end, bad.size());  // a valid parse stays in bounds
      } catch (const FormatError&) {
        ++rejected;
      }
    }
  EXPECT_GT(rejected, header_end);  // most flips break the file; none crashes
}

}  // namespace
}  // namespace gptoss

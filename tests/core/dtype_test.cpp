#include <gtest/gtest.h>

#include <limits>

#include "formats/core/checked_math.h"
#include "formats/core/dtype.h"

namespace gptoss {
namespace {

TEST(DType, ScalarSizes) {
  EXPECT_EQ(dtype_byte_size(DType::F32, 10), 40u);
  EXPECT_EQ(dtype_byte_size(DType::BF16, 3), 6u);
  EXPECT_EQ(dtype_byte_size(DType::F64, 2), 16u);
  EXPECT_EQ(dtype_byte_size(DType::BOOL, 5), 5u);
  EXPECT_EQ(dtype_byte_size(DType::E8M0, 7), 7u);
  EXPECT_EQ(dtype_byte_size(DType::U64, 0), 0u);
}

TEST(DType, BlockSizes) {
  EXPECT_EQ(dtype_byte_size(DType::Q8_0, 64), 68u);    // 2 blocks of 34
  EXPECT_EQ(dtype_byte_size(DType::MXFP4, 96), 51u);   // 3 blocks of 17
  EXPECT_EQ(dtype_byte_size(DType::F4, 4), 2u);        // two per byte
  EXPECT_EQ(dtype_byte_size(DType::F6_E2M3, 8), 6u);   // four in three bytes
  EXPECT_FALSE(dtype_byte_size(DType::Q8_0, 33));      // not a whole block
  EXPECT_FALSE(dtype_byte_size(DType::F4, 3));         // 12 bits: not whole bytes
  EXPECT_FALSE(dtype_byte_size(DType::MXFP4, 16));
}

TEST(DType, OpenAiMxfp4PairSizes) {
  // gpt-oss-20b mlp1 of one layer: 32 experts x 5760 rows x 2880 inputs.
  const uint64_t elements = 32ull * 5760 * 2880;
  const auto pair = mxfp4_pair_byte_size(elements);
  ASSERT_TRUE(pair);
  EXPECT_EQ(pair->blocks, elements / 2);   // [32, 5760, 90, 16] U8
  EXPECT_EQ(pair->scales, elements / 32);  // [32, 5760, 90] U8
  EXPECT_EQ(pair->blocks, 265420800u);
  EXPECT_EQ(pair->scales, 16588800u);
  // The same bytes as ggml's interleaved MXFP4 (17 per block).
  EXPECT_EQ(pair->blocks + pair->scales, dtype_byte_size(DType::MXFP4, elements));
  EXPECT_EQ(mxfp4_pair_byte_size(32)->blocks, 16u);
  EXPECT_EQ(mxfp4_pair_byte_size(32)->scales, 1u);
  EXPECT_EQ(mxfp4_pair_byte_size(0)->blocks, 0u);
  EXPECT_FALSE(mxfp4_pair_byte_size(48));  // not whole blocks
  const uint64_t largest = std::numeric_limits<uint64_t>::max() / 32 * 32;
  EXPECT_EQ(mxfp4_pair_byte_size(largest)->blocks, largest / 2);  // no overflow at the top of the range
}

TEST(DType, OverflowIsDetected) {
  const uint64_t big = std::numeric_limits<uint64_t>::max() / 2;
  EXPECT_FALSE(dtype_byte_size(DType::F32, big));
  const uint64_t dims[] = {1ull << 32, 1ull << 32};
  EXPECT_FALSE(checked_product(dims));
  const uint64_t ok[] = {1ull << 31, 1ull << 31};
  EXPECT_EQ(checked_product(ok), 1ull << 62);
  const uint64_t scalar[1] = {};
  EXPECT_EQ(checked_product(std::span<const uint64_t>(scalar, 0)), 1u);
  EXPECT_FALSE(checked_add(~0ull, 1));
  EXPECT_FALSE(checked_align_up(~0ull - 3, 32));
  EXPECT_EQ(checked_align_up(33, 32), 64u);
}

TEST(DType, NameTables) {
  EXPECT_EQ(dtype_from_safetensors_name("BF16"), DType::BF16);
  EXPECT_EQ(dtype_from_safetensors_name("F8_E8M0"), DType::E8M0);
  EXPECT_FALSE(dtype_from_safetensors_name("bf16"));  // case-sensitive like the official reader
  EXPECT_FALSE(dtype_from_safetensors_name("Q8_0"));  // not a safetensors dtype
  EXPECT_EQ(dtype_from_ggml_type(8), DType::Q8_0);
  EXPECT_EQ(dtype_from_ggml_type(39), DType::MXFP4);
  EXPECT_EQ(dtype_from_ggml_type(30), DType::BF16);
  EXPECT_EQ(dtype_from_ggml_type(0), DType::F32);
  EXPECT_EQ(dtype_from_ggml_type(2), DType::Q4_0);
  EXPECT_FALSE(dtype_from_ggml_type(4));  // Q4_2: removed from ggml
  EXPECT_EQ(dtype_from_name("q8_0"), DType::Q8_0);
  for (int i = 0; i < kDTypeCount; ++i) EXPECT_EQ(static_cast<int>(dtype_info(static_cast<DType>(i)).type), i);
}

}  // namespace
}  // namespace gptoss

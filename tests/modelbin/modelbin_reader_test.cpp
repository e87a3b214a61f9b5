// The container reader against crafted bad files: each corruption gets its own error naming the
// field (and offset), and no truncation of a valid file crashes or is accepted.
#include <gtest/gtest.h>

#include "formats/core/error.h"
#include "formats/core/mapped_file.h"
#include "formats/modelbin/modelbin_file.h"
#include "tests/modelbin/tiny_modelbin.h"

namespace gptoss::test {
namespace {
using modelbin::ModelBinFile;

ModelBinFile parse(std::vector<uint8_t> bytes) { return ModelBinFile::parse(MappedFile::from_bytes(std::move(bytes), "crafted.bin")); }

// Parses and returns the FormatError (fails the test when parsing succeeds).
FormatError parse_error(std::vector<uint8_t> bytes) {
  try {
    parse(std::move(bytes));
  } catch (const FormatError& e) {
    return e;
  }
  ADD_FAILURE() << "crafted file was accepted";
  return FormatError("", "", std::nullopt, "");
}

class TinyModelBin : public ::testing::Test {
 protected:
  TempDir dir;
  std::vector<uint8_t> good = tiny_modelbin_bytes(dir.path());
};

TEST_F(TinyModelBin, ValidFileParsesWithEveryFieldAndOffset) {
  const auto f = parse(good);
  EXPECT_EQ(f.header().num_blocks, 1u);
  EXPECT_EQ(f.header().num_experts, 2u);
  EXPECT_FLOAT_EQ(f.header().yarn_multiplier, 1.3465736f);
  EXPECT_EQ(f.tokenizer_header().num_special_tokens, 2u);
  EXPECT_EQ(f.tokenizer_header().num_text_tokens, 4u);
  EXPECT_EQ(f.tokenizer_header().regex_size, 4u);
  EXPECT_EQ(f.tokenizer_header().tokens_size, 2u * 4 + 1 + 2 + 3 + 2);
  EXPECT_EQ(f.regex(), "\\s+");
  ASSERT_EQ(f.text_tokens().size(), 4u);
  EXPECT_EQ(f.text_tokens()[2], "def");
  EXPECT_EQ(f.special_token_uuids()[1][2], 3);
  const auto& L = f.layout();
  EXPECT_EQ(L.embedding.offset, modelbin::kPageAlignment);  // tokenizer ends well before 16 KiB
  EXPECT_EQ(L.vocabulary_size, 6u);
  EXPECT_EQ(L.qkv_rows, 64u * 4);
  EXPECT_EQ(L.moe_block_offsets[0] % modelbin::kPageAlignment, 0u);
  EXPECT_EQ(L.file_size, good.size());  // no padding after the last MoE block
  // Each region holds the value the writer filled it with (1, 2, 3, ... in write order).
  uint8_t value = 1;
  for (const auto& r : L.write_order()) {
    const auto bytes = f.bytes(r.region);
    ASSERT_FALSE(bytes.empty());
    EXPECT_EQ(bytes.front(), value) << r.name;
    EXPECT_EQ(bytes.back(), value) << r.name;
    ++value;
  }
}

TEST_F(TinyModelBin, WrongMagic) {
  good[3] = 'X';
  const auto e = parse_error(good);
  EXPECT_EQ(e.field(), "magic");
  EXPECT_EQ(e.offset(), 0u);
  EXPECT_NE(e.message().find("GPT-OSS v1.0"), std::string::npos);
}

TEST_F(TinyModelBin, NonZeroReservedWord) {
  good[13] = 1;
  EXPECT_EQ(parse_error(good).field(), "file_header.reserved");
}

TEST_F(TinyModelBin, WrongModelUuid) {
  good[0x10] ^= 0xFF;
  const auto e = parse_error(good);
  EXPECT_EQ(e.field(), "model_uuid");
  EXPECT_EQ(e.offset(), 0x10u);
  EXPECT_NE(e.message().find("df52dc86-1789-4ed0-a295-66f10508145b"), std::string::npos);
}

TEST_F(TinyModelBin, WrongLayoutUuid) {
  good[0x64 + 15] ^= 1;
  const auto e = parse_error(good);
  EXPECT_EQ(e.field(), "layout_uuid");
  EXPECT_EQ(e.offset(), 0x64u);
}

TEST_F(TinyModelBin, WrongTokenizerUuid) {
  good[0x74] = 0;
  const auto e = parse_error(good);
  EXPECT_EQ(e.field(), "tokenizer_uuid");
  EXPECT_EQ(e.offset(), 0x74u);
}

TEST_F(TinyModelBin, HeaderDimsLargerThanTheFile) {
  store_u32(good.data() + 0x20 + 8, 3);  // num_experts 2 -> 3: the MoE block no longer fits
  const auto e = parse_error(good);
  EXPECT_EQ(e.field(), "model_header");
  EXPECT_NE(e.message().find("MoE weights past the end of the file (" + std::to_string(good.size()) + " bytes)"),
            std::string::npos)
      << e.what();
}

TEST_F(TinyModelBin, HugeBlockCountFailsFastWithoutAllocating) {
  store_u32(good.data() + 0x20 + 4, 0xFFFFFFFFu);
  const auto e = parse_error(good);
  EXPECT_EQ(e.field(), "model_header");
  EXPECT_NE(e.message().find("past the end of the file"), std::string::npos);
}

TEST_F(TinyModelBin, EmbeddingDimNotAMultipleOf32) {
  store_u32(good.data() + 0x20 + 16, 33);
  const auto e = parse_error(good);
  EXPECT_EQ(e.field(), "model_header.embedding_dim");
  EXPECT_EQ(e.offset(), 0x20u + 16);
}

TEST_F(TinyModelBin, HeaderDimsSmallerThanTheFile) {
  good.resize(good.size() + 2 * modelbin::kPageAlignment, 0);
  const auto e = parse_error(good);
  EXPECT_EQ(e.field(), "file size");
  EXPECT_NE(e.message().find("trailing data"), std::string::npos);
}

TEST_F(TinyModelBin, TruncatedTokenizer) {
  good.resize(kTinyTokensOffset + 5);
  const auto e = parse_error(good);
  EXPECT_EQ(e.field(), "text_tokens");
  EXPECT_EQ(e.offset(), kTinyTokensOffset);
  EXPECT_NE(e.message().find("truncated tokenizer"), std::string::npos);
}

TEST_F(TinyModelBin, TokenLengthPastTheSection) {
  const uint64_t third = kTinyTokensOffset + (2 + 1) + (2 + 2);  // length prefix of token 2 ("def")
  ASSERT_EQ(load_u16(good.data() + third), 3u);
  store_u16(good.data() + third, 9);
  const auto e = parse_error(good);
  EXPECT_EQ(e.field(), "text token 2");
  EXPECT_EQ(e.offset(), third);
  EXPECT_NE(e.message().find("runs past the end of the text-token section"), std::string::npos);
}

TEST_F(TinyModelBin, TokensSizeLargerThanTheTokens) {
  store_u32(good.data() + 0x84 + 12, load_u32(good.data() + 0x84 + 12) + 2);
  const auto e = parse_error(good);
  EXPECT_EQ(e.field(), "tokenizer_header.tokens_size");
  EXPECT_NE(e.message().find("text tokens use"), std::string::npos);
}

TEST_F(TinyModelBin, RegexWithoutNul) {
  ASSERT_EQ(good[kTinyRegexOffset + 3], 0);
  good[kTinyRegexOffset + 3] = '*';
  const auto e = parse_error(good);
  EXPECT_EQ(e.field(), "regex");
  EXPECT_EQ(e.offset(), kTinyRegexOffset + 3);
  EXPECT_NE(e.message().find("not NUL-terminated"), std::string::npos);
}

TEST_F(TinyModelBin, RegexWithEarlyNul) {
  good[kTinyRegexOffset + 1] = 0;
  const auto e = parse_error(good);
  EXPECT_EQ(e.field(), "regex");
  EXPECT_EQ(e.offset(), kTinyRegexOffset + 1);
}

TEST_F(TinyModelBin, RegexSizeRunningPastTheFile) {
  store_u32(good.data() + 0x84 + 8, 0x7FFFFFFFu);
  const auto e = parse_error(good);
  EXPECT_EQ(e.field(), "regex");
  EXPECT_NE(e.message().find("runs past the end of the file"), std::string::npos);
}

TEST_F(TinyModelBin, SpecialTableRunningPastTheFile) {
  store_u32(good.data() + 0x84, 0xFFFFFFFFu);
  const auto e = parse_error(good);
  EXPECT_EQ(e.field(), "special_token_table");
  EXPECT_EQ(e.offset(), modelbin::kSpecialTableOffset);
}

TEST_F(TinyModelBin, EveryTruncationIsAClearErrorNeverACrash) {
  std::vector<uint64_t> cuts;
  for (uint64_t n = 0; n < 1024; ++n) cuts.push_back(n);  // every byte of the header and tokenizer
  for (uint64_t n = 1024; n < good.size(); n += 997) cuts.push_back(n);
  cuts.push_back(good.size() - 1);
  for (uint64_t n : cuts) {
    std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
    try {
      parse(std::move(cut));
      ADD_FAILURE() << "file truncated to " << n << " bytes was accepted";
    } catch (const FormatError& e) {
      EXPECT_FALSE(e.field().empty()) << n;
    }
  }
}

TEST_F(TinyModelBin, RandomByteFlipsInTheHeaderAreErrorsOrValid) {
  // Flipping any byte of the header area must either parse (a value change the format allows)
  // or throw FormatError: never anything else. Every byte, three masks, the same flips each run;
  // both outcomes occur, so the loop reaches fields the reader checks and fields it leaves free.
  uint64_t parsed = 0, refused = 0;
  for (uint64_t at = 0; at < kTinyTokensOffset + 16; ++at)
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xFF}}) {
      auto bad = good;
      bad[at] ^= mask;
      try {
        parse(std::move(bad));
        ++parsed;
      } catch (const FormatError&) {
        ++refused;
      }
    }
  EXPECT_GT(parsed, 0u) << refused << " flips refused, none parsed";
  EXPECT_GT(refused, 0u) << parsed << " flips parsed, none refused";
}

}  // namespace
}  // namespace gptoss::test

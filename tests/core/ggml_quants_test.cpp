// ggml's block quantizations: the DType table's facts, the scale packings of the K-quants
// unpacked from bytes packed the way ggml's quantizers pack them, one hand-made block per type
// decoded to the values its layout gives, and the IQ grids pinned to ggml's. Bit-identity with
// ggml's own decoders over real llama-quantize output: tests/gguf/quant_goldens_test.cpp.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <set>
#include <span>
#include <vector>

#include "formats/codecs/float_codec.h"
#include "formats/codecs/ggml_quants.h"
#include "formats/codecs/iq_grids.h"
#include "formats/core/dtype.h"
#include "formats/core/float16.h"
#include "verify/sha256.h"

namespace gptoss {
namespace {

namespace q = ggml_quants;

void put_f16(uint8_t* p, float v) {
  const uint16_t h = f32_to_f16(v);
  p[0] = static_cast<uint8_t>(h);
  p[1] = static_cast<uint8_t>(h >> 8);
}

float f(int x) { return static_cast<float>(x); }

std::vector<float> decode(DType type, const std::vector<uint8_t>& block) {
  const auto& info = dtype_info(type);
  EXPECT_EQ(block.size(), info.block_bytes);
  std::vector<float> out(info.block_elements);
  decode_to_f32(type, block.data(), out.size(), out.data());
  return out;
}

TEST(GgmlQuants, TableHoldsGgmlsBlockShapesAndIds) {
  struct Fact {
    DType type;
    int id;
    uint32_t elements, bytes;
    bool decodable;
  };
  // ggml's enum ggml_type and sizeof(block_*) (ggml-common.h).
  const Fact facts[] = {
      {DType::Q4_0, 2, 32, 18, true},      {DType::Q4_1, 3, 32, 20, true},      {DType::Q5_0, 6, 32, 22, true},
      {DType::Q5_1, 7, 32, 24, true},      {DType::Q8_0, 8, 32, 34, true},      {DType::Q8_1, 9, 32, 36, false},
      {DType::Q2_K, 10, 256, 84, true},    {DType::Q3_K, 11, 256, 110, true},   {DType::Q4_K, 12, 256, 144, true},
      {DType::Q5_K, 13, 256, 176, true},   {DType::Q6_K, 14, 256, 210, true},   {DType::Q8_K, 15, 256, 292, false},
      {DType::IQ2_XXS, 16, 256, 66, true}, {DType::IQ2_XS, 17, 256, 74, true},  {DType::IQ3_XXS, 18, 256, 98, true},
      {DType::IQ1_S, 19, 256, 50, true},   {DType::IQ4_NL, 20, 32, 18, true},   {DType::IQ3_S, 21, 256, 110, true},
      {DType::IQ2_S, 22, 256, 82, true},   {DType::IQ4_XS, 23, 256, 136, true}, {DType::IQ1_M, 29, 256, 56, true},
      {DType::TQ1_0, 34, 256, 54, false},  {DType::TQ2_0, 35, 256, 66, false},  {DType::MXFP4, 39, 32, 17, true},
  };
  for (const auto& f : facts) {
    const auto& info = dtype_info(f.type);
    EXPECT_EQ(info.ggml_type, f.id) << info.name;
    EXPECT_EQ(info.block_elements, f.elements) << info.name;
    EXPECT_EQ(info.block_bytes, f.bytes) << info.name;
    EXPECT_EQ(is_decodable(f.type), f.decodable) << info.name;
    EXPECT_EQ(dtype_from_ggml_type(static_cast<uint32_t>(f.id)), f.type) << info.name;
    EXPECT_EQ(dtype_from_name(info.name), f.type);
  }
  std::set<int> ids;
  for (int i = 0; i < kDTypeCount; ++i) {
    const int id = dtype_info(static_cast<DType>(i)).ggml_type;
    if (id >= 0) {
      EXPECT_TRUE(ids.insert(id).second) << "ggml id " << id << " twice";
    }
  }
  for (uint32_t removed : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u}) EXPECT_FALSE(dtype_from_ggml_type(removed)) << removed;
}

TEST(GgmlQuants, DecodeRefusesPartialBlocksAndUndecodableTypes) {
  std::vector<uint8_t> in(210);
  std::vector<float> out(256);
  EXPECT_THROW(decode_to_f32(DType::Q6_K, in.data(), 128, out.data()), std::invalid_argument);
  EXPECT_THROW(decode_to_f32(DType::Q8_K, in.data(), 256, out.data()), std::invalid_argument);
}

// The 12 scale bytes of a Q4_K / Q5_K block holding these eight 6-bit scales and mins, packed as
// ggml's quantize_row_q4_K_ref packs them.
std::array<uint8_t, 12> pack_k_scales(const uint8_t (&scale)[8], const uint8_t (&min)[8]) {
  std::array<uint8_t, 12> s{};
  for (unsigned j = 0; j < 8; ++j) {
    if (j < 4) {
      s[j] = scale[j];
      s[j + 4] = min[j];
    } else {
      s[j + 4] = static_cast<uint8_t>((scale[j] & 0xF) | ((min[j] & 0xF) << 4));
      s[j - 4] |= static_cast<uint8_t>((scale[j] >> 4) << 6);
      s[j] |= static_cast<uint8_t>((min[j] >> 4) << 6);
    }
  }
  return s;
}

TEST(GgmlQuants, KScalesAndMinsUnpackAsPacked) {
  const uint8_t scale[8] = {1, 62, 17, 40, 63, 33, 18, 50}, min[8] = {63, 2, 48, 21, 36, 59, 7, 44};
  const auto packed = pack_k_scales(scale, min);
  for (unsigned j = 0; j < 8; ++j) {
    EXPECT_EQ(q::k_scale_min(packed.data(), j).scale, scale[j]) << j;
    EXPECT_EQ(q::k_scale_min(packed.data(), j).min, min[j]) << j;
  }
}

TEST(GgmlQuants, Q3KScalesUnpackAsPacked) {
  // ggml's quantize_row_q3_K_ref: the low nibbles in bytes 0..7 (high nibbles for j >= 8), the
  // top 2 bits in bytes 8..11.
  uint8_t scale[16];
  for (unsigned j = 0; j < 16; ++j) scale[j] = static_cast<uint8_t>((j * 37 + 11) % 64);
  uint8_t packed[12] = {};
  for (unsigned j = 0; j < 16; ++j) {
    if (j < 8) packed[j] = scale[j] & 0xF;
    else packed[j - 8] |= static_cast<uint8_t>((scale[j] & 0xF) << 4);
    packed[8 + j % 4] |= static_cast<uint8_t>((scale[j] >> 4) << (2 * (j / 4)));
  }
  for (unsigned j = 0; j < 16; ++j) EXPECT_EQ(q::q3_k_scale(packed, j), scale[j]) << j;
}

// An 18-byte block (Q4_0, IQ4_NL) of scale d whose byte j holds level j (low nibble, element j)
// and level 15 - j (high nibble, element j + 16).
std::vector<uint8_t> nibble_block(float d) {
  std::vector<uint8_t> b(18);
  put_f16(b.data(), d);
  for (unsigned j = 0; j < 16; ++j) b[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  return b;
}

TEST(GgmlQuants, Q4_0AndQ4_1NibbleOrder) {
  const auto b = nibble_block(0.5f);
  auto v = decode(DType::Q4_0, b);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(v[j], f(j - 8) * 0.5f);
    EXPECT_EQ(v[j + 16], f(7 - j) * 0.5f);
  }
  std::vector<uint8_t> c(20);
  put_f16(c.data(), 0.25f);
  put_f16(c.data() + 2, -1.0f);
  std::memcpy(c.data() + 4, b.data() + 2, 16);
  v = decode(DType::Q4_1, c);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(v[j], f(j) * 0.25f - 1.0f);
    EXPECT_EQ(v[j + 16], f(15 - j) * 0.25f - 1.0f);
  }
}

TEST(GgmlQuants, Q5FifthBitOfElementIIsBitIOfQh) {
  std::vector<uint8_t> b(22);
  put_f16(b.data(), 1.0f);
  const uint32_t qh = 0x8000'0001u | (1u << 17);  // elements 0, 17 and 31
  for (int i = 0; i < 4; ++i) b[2 + i] = static_cast<uint8_t>(qh >> (8 * i));
  for (unsigned j = 0; j < 16; ++j) b[6 + j] = 0x33;  // every low 4 bits = 3
  auto v = decode(DType::Q5_0, b);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(v[i], ((qh >> i) & 1 ? 19 : 3) - 16) << i;
  std::vector<uint8_t> c(24);
  put_f16(c.data(), 2.0f);
  put_f16(c.data() + 2, 0.5f);
  std::memcpy(c.data() + 4, b.data() + 2, 20);
  v = decode(DType::Q5_1, c);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(v[i], ((qh >> i) & 1 ? 19 : 3) * 2.0f + 0.5f) << i;
}

TEST(GgmlQuants, Iq4NlAndIq4XsUseTheNonLinearLevels) {
  auto v = decode(DType::IQ4_NL, nibble_block(2.0f));
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(v[j], 2.0f * q::kIq4nlValues[j]);
    EXPECT_EQ(v[j + 16], 2.0f * q::kIq4nlValues[15 - j]);
  }
  // IQ4_XS: sub-block ib's 6-bit scale = nibble ib of scales_l | bits 2ib..2ib+1 of scales_h << 4.
  std::vector<uint8_t> x(136);
  put_f16(x.data(), 1.0f);
  const uint8_t ls[8] = {32, 33, 0, 63, 40, 17, 31, 48};
  uint16_t scales_h = 0;
  for (unsigned ib = 0; ib < 8; ++ib) {
    x[4 + ib / 2] |= static_cast<uint8_t>((ls[ib] & 0xF) << (4 * (ib % 2)));
    scales_h |= static_cast<uint16_t>((ls[ib] >> 4) << (2 * ib));
  }
  x[2] = static_cast<uint8_t>(scales_h);
  x[3] = static_cast<uint8_t>(scales_h >> 8);
  for (unsigned j = 0; j < 128; ++j) x[8 + j] = 0xF0;  // low nibble 0, high nibble 15
  v = decode(DType::IQ4_XS, x);
  for (int ib = 0; ib < 8; ++ib)
    for (int j = 0; j < 16; ++j) {
      EXPECT_EQ(v[32 * ib + j], (ls[ib] - 32) * static_cast<float>(q::kIq4nlValues[0])) << ib;
      EXPECT_EQ(v[32 * ib + 16 + j], (ls[ib] - 32) * static_cast<float>(q::kIq4nlValues[15])) << ib;
    }
}

TEST(GgmlQuants, Q4KAndQ5KSubBlocks) {
  const uint8_t scale[8] = {1, 2, 3, 4, 5, 6, 7, 8}, min[8] = {8, 7, 6, 5, 4, 3, 2, 1};
  const auto packed = pack_k_scales(scale, min);
  std::vector<uint8_t> b(144);
  put_f16(b.data(), 0.5f);
  put_f16(b.data() + 2, 0.25f);
  std::memcpy(b.data() + 4, packed.data(), 12);
  for (unsigned l = 0; l < 128; ++l) b[16 + l] = static_cast<uint8_t>((l % 16) | ((15 - l % 16) << 4));
  auto v = decode(DType::Q4_K, b);
  for (int chunk = 0; chunk < 4; ++chunk)
    for (int l = 0; l < 32; ++l) {
      // Sub-block 2*chunk from the low nibbles, 2*chunk + 1 from the high nibbles of the same bytes.
      EXPECT_EQ(v[64 * chunk + l], 0.5f * scale[2 * chunk] * f(l % 16) - 0.25f * min[2 * chunk]);
      EXPECT_EQ(v[64 * chunk + 32 + l], 0.5f * scale[2 * chunk + 1] * f(15 - l % 16) - 0.25f * min[2 * chunk + 1]);
    }
  std::vector<uint8_t> c(176);
  std::memcpy(c.data(), b.data(), 16);
  for (unsigned l = 0; l < 32; ++l) c[16 + l] = static_cast<uint8_t>(l & 1 ? 0xAA : 0x55);  // qh: alternate sub-blocks
  std::memcpy(c.data() + 48, b.data() + 16, 128);
  v = decode(DType::Q5_K, c);
  for (int sub = 0; sub < 8; ++sub)
    for (int l = 0; l < 32; ++l) {
      const int low = sub % 2 ? 15 - l % 16 : l % 16;
      const int high = ((l & 1 ? 0xAA : 0x55) >> sub) & 1;
      EXPECT_EQ(v[32 * sub + l], 0.5f * scale[sub] * f(low + 16 * high) - 0.25f * min[sub]) << sub << " " << l;
    }
}

TEST(GgmlQuants, Q2KAndQ3KRunsAndScales) {
  // Q2_K: run r (0..7) of 32 elements is bits 2(r%4)..2(r%4)+1 of qs[32(r/4) + l].
  std::vector<uint8_t> b(84);
  for (unsigned i = 0; i < 16; ++i) b[i] = static_cast<uint8_t>((i % 16) | ((15 - i) << 4));
  for (unsigned l = 0; l < 64; ++l) b[16 + l] = 0xE4;  // fields 0, 1, 2, 3 from bit 0 up
  put_f16(b.data() + 80, 1.0f);
  put_f16(b.data() + 82, 0.5f);
  auto v = decode(DType::Q2_K, b);
  for (int i = 0; i < 256; ++i) {
    const int sub = i / 16, level = (i / 32) % 4;
    EXPECT_EQ(v[i], f(sub % 16) * f(level) - 0.5f * f(15 - sub)) << i;
  }
  // Q3_K: the third bit of element l of run r is bit r of hmask[l % 32]; clear subtracts 4.
  std::vector<uint8_t> c(110);
  for (unsigned l = 0; l < 32; ++l) c[l] = static_cast<uint8_t>(l % 2 ? 0x0F : 0xF0);
  for (unsigned l = 0; l < 64; ++l) c[32 + l] = 0xE4;
  for (unsigned i = 0; i < 8; ++i) c[96 + i] = 0x11 * 9;  // every low 4 bits of the 16 scales = 9
  for (unsigned i = 0; i < 4; ++i) c[104 + i] = 0xAA;     // every high 2 bits = 2: scale 41
  put_f16(c.data() + 108, 0.25f);
  v = decode(DType::Q3_K, c);
  for (int i = 0; i < 256; ++i) {
    const int run = i / 32, l = i % 32, level = run % 4;
    const bool high = ((l % 2 ? 0x0F : 0xF0) >> run) & 1;
    EXPECT_EQ(v[i], 0.25f * 9 * f(level - (high ? 0 : 4))) << i;
  }
}

TEST(GgmlQuants, Q6KHalvesRunsAndScales) {
  std::vector<uint8_t> b(210);
  for (unsigned l = 0; l < 128; ++l) b[l] = static_cast<uint8_t>(l % 16 | ((l % 16) << 4));
  for (unsigned l = 0; l < 64; ++l) b[128 + l] = 0xE4;  // high bits 0, 1, 2, 3 for runs 0..3
  for (unsigned i = 0; i < 16; ++i) b[192 + i] = static_cast<uint8_t>(static_cast<int8_t>(i % 2 ? -3 : 5));
  put_f16(b.data() + 208, 0.5f);
  auto v = decode(DType::Q6_K, b);
  for (int i = 0; i < 256; ++i) {
    const int run = (i % 128) / 32, l = i % 32;
    const int level = ((l % 16) | (run << 4)) - 32;
    const int sc = (i / 16) % 2 ? -3 : 5;
    EXPECT_EQ(v[i], 0.5f * f(sc) * f(level)) << i;
  }
}

TEST(GgmlQuants, Iq2AndIq3GridsSignsAndScales) {
  // Every index 0 (a grid's first entry), every sign index 1: signs 0b10000001, elements 0 and 7
  // negative (the eighth sign is the parity of the other seven).
  EXPECT_EQ(iq_grids::signs_of_index(1), 0x81);
  EXPECT_EQ(iq_grids::signs_of_index(3), 0x03);
  std::vector<uint8_t> b(66);
  put_f16(b.data(), 1.0f);
  for (unsigned ib = 0; ib < 8; ++ib) {
    const uint32_t aux = 1u | (1u << 7) | (1u << 14) | (1u << 21) | (ib << 28);
    for (int k = 0; k < 4; ++k) b[2 + 8 * ib + 4 + k] = static_cast<uint8_t>(aux >> (8 * k));
  }
  auto v = decode(DType::IQ2_XXS, b);
  for (int i = 0; i < 256; ++i) {
    const float db = (0.5f + static_cast<float>(i / 32)) * 0.25f;
    const float magnitude = db * static_cast<float>(iq_grids::kIq2xxs[0] & 0xFF);
    EXPECT_EQ(v[i], i % 8 == 0 || i % 8 == 7 ? -magnitude : magnitude) << i;
  }
  // IQ3_S: index = qs byte | a 9th bit from qh; sub-block scale 1 + 2 * nibble.
  std::vector<uint8_t> c(110);
  put_f16(c.data(), 1.0f);
  c[2] = 5;                 // group 0, first half: entry 5
  c[66] = 0x01;             // qh[0] bit 0: the first index of group 0 + 256 -> entry 261
  c[74] = 0x0F;             // signs of group 0: elements 0..3 negative
  c[106] = 0x32;            // scales: sub-block 0 -> 1 + 2*2 = 5, sub-block 1 -> 1 + 2*3 = 7
  v = decode(DType::IQ3_S, c);
  for (int j = 0; j < 4; ++j) {
    EXPECT_EQ(v[j], -5.0f * static_cast<float>((iq_grids::kIq3s[261] >> (8 * j)) & 0xFF)) << j;
    EXPECT_EQ(v[4 + j], 5.0f * static_cast<float>((iq_grids::kIq3s[0] >> (8 * j)) & 0xFF)) << j;
  }
  EXPECT_EQ(v[32], 7.0f * static_cast<float>(iq_grids::kIq3s[0] & 0xFF));
}

TEST(GgmlQuants, Iq1GridsAndShifts) {
  // IQ1_S: u16 qh of sub-block ib: index bits 8-10 per group (3 bits each), scale bits 12-14,
  // shift sign bit 15.
  std::vector<uint8_t> b(50);
  put_f16(b.data(), 0.5f);
  b[2] = 7;                                          // group 0 of sub-block 0: low index bits 7
  const uint16_t qh0 = 1u | (3u << 12) | 0x8000u;    // index 7 + 256 = 263, scale 2*3 + 1, shift -1/8
  b[34] = static_cast<uint8_t>(qh0);
  b[35] = static_cast<uint8_t>(qh0 >> 8);
  auto v = decode(DType::IQ1_S, b);
  for (int j = 0; j < 8; ++j) {
    const float grid = static_cast<int8_t>(iq_grids::kIq1s[263] >> (8 * j));
    EXPECT_EQ(v[j], 0.5f * 7 * (grid - 0.125f)) << j;
    EXPECT_EQ(v[8 + j], 0.5f * 7 * (static_cast<int8_t>(iq_grids::kIq1s[0] >> (8 * j)) - 0.125f)) << j;
    EXPECT_EQ(v[32 + j], 0.5f * 1 * (static_cast<int8_t>(iq_grids::kIq1s[0] >> (8 * j)) + 0.125f)) << j;
  }
  // IQ1_M: the f16 d in the top nibbles of the four u16 scale words (0x3C00 = 1.0), two 3-bit
  // scales per 32 elements, per group a qh nibble of 3 index bits and the shift sign.
  std::vector<uint8_t> c(56);
  const uint16_t d = 0x3C00;
  uint16_t sc[4] = {static_cast<uint16_t>(2u | (5u << 3)), 0, 0, 0};  // sub-block 0: scales 5, 11
  for (int k = 0; k < 4; ++k) sc[k] |= static_cast<uint16_t>(((d >> (4 * k)) & 0xF) << 12);
  for (int k = 0; k < 4; ++k) {
    c[48 + 2 * k] = static_cast<uint8_t>(sc[k]);
    c[48 + 2 * k + 1] = static_cast<uint8_t>(sc[k] >> 8);
  }
  c[0] = 7;
  c[32] = 0x09 | 0x80;  // group 0: index bits 8-10 = 1, shift negative; group 1: shift negative
  v = decode(DType::IQ1_M, c);
  for (int j = 0; j < 8; ++j) {
    EXPECT_EQ(v[j], 5.0f * (static_cast<int8_t>(iq_grids::kIq1s[263] >> (8 * j)) - 0.125f)) << j;
    EXPECT_EQ(v[8 + j], 5.0f * (static_cast<int8_t>(iq_grids::kIq1s[0] >> (8 * j)) - 0.125f)) << j;
    EXPECT_EQ(v[16 + j], 11.0f * (static_cast<int8_t>(iq_grids::kIq1s[0] >> (8 * j)) + 0.125f)) << j;
    EXPECT_EQ(v[32 + j], 1.0f * (static_cast<int8_t>(iq_grids::kIq1s[0] >> (8 * j)) + 0.125f)) << j;
  }
}

template <class T, size_t N>
std::string table_sha256(const T (&table)[N]) {
  return sha256_hex(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(table), sizeof table));
}

TEST(GgmlQuants, GridsAreGgmls) {
  // SHA-256 of ggml-common.h's iq*_grid tables as little-endian words (llama.cpp d32676d).
  EXPECT_EQ(table_sha256(iq_grids::kIq2xxs), "05826b5d3e472a3a78f196be62ac78acf81df0f909626e12ab9fa2a5d490dd54");
  EXPECT_EQ(table_sha256(iq_grids::kIq2xs), "06e47aaca60b4dc1d9b5a3f34540437058a6b142b4d7a59d5ded769b4d1bf1de");
  EXPECT_EQ(table_sha256(iq_grids::kIq2s), "e1aa1473412b0552c2174c30ef22ab4073f6a181b85a17056e8249bd2932fd88");
  EXPECT_EQ(table_sha256(iq_grids::kIq3xxs), "46e35f5a997efdee6c99ce57854c8a0d4f0ff8ca57e5e8a60c0793ea580acf5d");
  EXPECT_EQ(table_sha256(iq_grids::kIq3s), "bd1af4945a1717c65610b0284e4628b9a1ba3b306fae3a06f6e5f597356e349f");
  EXPECT_EQ(table_sha256(iq_grids::kIq1s), "07540ffc1aeaf6ad4d97e96b0fcc765aae39671d4ae4a27bbd0e796fde167c6a");
}

}  // namespace
}  // namespace gptoss

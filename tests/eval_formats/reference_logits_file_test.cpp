// The reference logits file on its own: records round-trip at f16 precision with the exact fields
// exact, the header round-trips, and malformed files are refused naming the field.
#include <gtest/gtest.h>

#include <cmath>

#include "formats/core/error.h"
#include "formats/core/mapped_file.h"
#include "formats/core/zstd_frames.h"
#include "runtime/eval/reference_logits_file.h"
#include "tests/test_support.h"

namespace gptoss::eval {
namespace {

ReferenceLogitsHeader small_header() {
  ReferenceLogitsHeader h;
  h.model_digest = "abc";
  h.model_source = "model";
  h.vocab_size = 37;
  h.tokenizer_digest = "tok";
  h.text_sha256 = "text";
  h.text_bytes = 99;
  h.ctx = 6;  // 2 scored positions per chunk (3 and 4)
  h.chunks = 2;
  h.engine = "cpu";
  h.device = "CPU (f32)";
  for (uint32_t i = 0; i < 12; ++i) h.tokens.push_back(i % 37);
  return h;
}

std::vector<float> logits_row(int seed) {
  std::vector<float> v;
  for (int i = 0; i < 37; ++i) v.push_back(std::sin(static_cast<float>(i * 7 + seed)) * 9.0f + static_cast<float>(seed));
  return v;
}

TEST(ReferenceLogitsFile, RecordsRoundTrip) {
  test::TempDir dir;
  const auto path = dir / "ref.logits";
  const auto h = small_header();
  {
    ReferenceLogitsWriter writer(path, h, 3);
    for (int p = 0; p < 4; ++p) {
      const auto v = logits_row(p);
      writer.write_frame(zstd_compress_frame(encode_reference_record(v, summarize_row(v), 5), writer.level()));
    }
    writer.commit();
  }
  ReferenceLogitsReader reader(path);
  EXPECT_EQ(reader.header().model_digest, "abc");
  EXPECT_EQ(reader.header().tokens, h.tokens);
  EXPECT_EQ(reader.header().ctx, 6u);
  EXPECT_EQ(reader.header().engine, "cpu");
  std::vector<uint8_t> raw;
  std::vector<float> values(37);
  for (int chunk = 0; chunk < 2; ++chunk) {
    const auto frames = reader.next_chunk();
    ASSERT_EQ(frames.size(), 2u);
    for (int j = 0; j < 2; ++j) {
      const auto v = logits_row(chunk * 2 + j);
      const auto s = summarize_row(v);
      const auto r = reader.decode(frames[j], raw, values);
      EXPECT_EQ(r.top, s.argmax);
      EXPECT_FLOAT_EQ(static_cast<float>(r.nll), static_cast<float>(s.log_norm - v[5]));
      EXPECT_FLOAT_EQ(static_cast<float>(r.log_p_top), static_cast<float>(s.max - s.log_norm));
      double entropy = 0;
      for (float x : v) entropy -= std::exp(x - s.log_norm) * (x - s.log_norm);
      for (size_t i = 0; i < 37; ++i) {
        const double exact = v[i] - s.log_norm + entropy;  // log P(i) + H(P)
        EXPECT_NEAR(r.relative_log_probs[i], exact, std::fabs(exact) / 2048 + 1e-6) << i;  // f16: 11 bits
      }
    }
  }
  reader.expect_end();
}

TEST(ReferenceLogitsFile, RefusesMalformedFiles) {
  test::TempDir dir;
  const auto path = dir / "ref.logits";
  // Fewer records than the header promises: the writer refuses to publish.
  {
    ReferenceLogitsWriter writer(path, small_header(), 3);
    EXPECT_THROW(writer.commit(), std::logic_error);
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  // Not a zstd file at all.
  test::write_file_bytes(path, {'h', 'e', 'l', 'l', 'o', '!', '!', '!', '!', '!'});
  try {
    ReferenceLogitsReader reader(path);
    FAIL() << "accepted garbage";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.field(), "header");
  }
  // A zstd frame that is not this format's header.
  const std::string other = "something else\n{}";
  test::write_file_bytes(path, zstd_compress_frame({reinterpret_cast<const uint8_t*>(other.data()), other.size()}, 1));
  EXPECT_THROW(ReferenceLogitsReader{path}, FormatError);
  // A header whose ids do not fill ctx x chunks.
  auto h = small_header();
  h.tokens.pop_back();
  {
    ReferenceLogitsWriter writer(path, h, 3);
    const auto v = logits_row(0);
    for (int p = 0; p < 4; ++p)
      writer.write_frame(zstd_compress_frame(encode_reference_record(v, summarize_row(v), 5), writer.level()));
    writer.commit();
  }
  try {
    ReferenceLogitsReader reader(path);
    FAIL() << "accepted a header with 11 ids for 2 chunks of 6";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.field(), "header.tokens");
  }
}

// A header field of the wrong type is a FormatError naming the file and the field's path, in
// JsonValue's words, not nlohmann's type_error text under "header".
TEST(ReferenceLogitsFile, WrongTypeInTheHeaderNamesTheFieldPath) {
  test::TempDir dir;
  const auto path = dir / "typed.logits";
  {
    ReferenceLogitsWriter writer(path, small_header(), 3);
    const auto v = logits_row(0);
    for (int p = 0; p < 4; ++p)
      writer.write_frame(zstd_compress_frame(encode_reference_record(v, summarize_row(v), 5), writer.level()));
    writer.commit();
  }
  // The writer's own header with one field replaced, as the only frame of a file.
  ZstdFrameReader frames(MappedFile::open(path));
  const auto header = frames.decompress(frames.next("header", 1 << 20), "header");
  const std::string text(header.begin(), header.end());
  const size_t json_start = text.find('\n') + 1;
  auto with = [&](const std::string& from, const std::string& to) {
    std::string changed = text;
    const size_t at = changed.find(from, json_start);
    EXPECT_NE(at, std::string::npos) << from;
    changed.replace(at, from.size(), to);
    test::write_file_bytes(dir / "bad.logits",
                           zstd_compress_frame({reinterpret_cast<const uint8_t*>(changed.data()), changed.size()}, 1));
    try {
      ReferenceLogitsReader reader(dir / "bad.logits");
    } catch (const FormatError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const std::string bad = (dir / "bad.logits").string();
  EXPECT_EQ(with(R"("ctx":6)", R"("ctx":"x")"),
            bad + ": header.chunking.ctx at byte 0: expected a non-negative integer below 2^32, found the string \"x\"");
  EXPECT_EQ(with(R"("engine":"cpu")", R"("engine":7)"),
            bad + ": header.computed_by.engine at byte 0: expected a string, found the number 7");
  EXPECT_EQ(with(R"("tokens":[0,1,2)", R"("tokens":[0,1.5,2)"),
            bad + ": header.tokens[1] at byte 0: expected a non-negative integer below 2^32, found the number 1.5");
  EXPECT_EQ(with(R"("sha256":"text")", R"("sha":"text")"), bad + ": header.text.sha256 at byte 0: required field is missing");
  EXPECT_EQ(with(R"("bytes":99)", R"("bytes":-1)"),
            bad + ": header.text.bytes at byte 0: expected a non-negative integer below 2^64, found the number -1");
}

}  // namespace
}  // namespace gptoss::eval

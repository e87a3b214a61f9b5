#include <gtest/gtest.h>

#include <stdexcept>

#include "formats/core/atomic_file.h"
#include "formats/core/error.h"
#include "formats/core/mapped_file.h"
#include "tests/test_support.h"

namespace gptoss {
namespace {
namespace fs = std::filesystem;

size_t count_entries(const fs::path& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

TEST(AtomicFile, AppearsOnlyOnCommit) {
  test::TempDir dir;
  const auto target = dir / "out.bin";
  {
    AtomicFileWriter w(target);
    w.write_u32(0x01020304);
    w.pad_to(16);
    EXPECT_EQ(w.position(), 16u);
    EXPECT_FALSE(fs::exists(target));
    w.commit();
  }
  const auto bytes = test::read_file_bytes(target);
  ASSERT_EQ(bytes.size(), 16u);
  EXPECT_EQ(bytes[0], 4);
  EXPECT_EQ(bytes[3], 1);
  EXPECT_EQ(count_entries(dir.path()), 1u);  // no temp file left
}

TEST(AtomicFile, AbandonKeepsOldTargetAndLeavesNoTemp) {
  test::TempDir dir;
  const auto target = dir / "model.gguf";
  test::write_file_bytes(target, {1, 2, 3});
  try {
    AtomicFileWriter w(target);
    w.write_zeros(1 << 20);
    throw std::runtime_error("simulated failure half way");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(test::read_file_bytes(target), (std::vector<uint8_t>{1, 2, 3}));
  EXPECT_EQ(count_entries(dir.path()), 1u);
}

TEST(AtomicFile, UnwritableFolderGivesClearError) {
  try {
    AtomicFileWriter w("/nonexistent-folder/x.bin");
    FAIL() << "expected an error";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot create temp file"), std::string::npos) << e.what();
  }
}

TEST(MappedFile, SliceIsBoundsChecked) {
  test::TempDir dir;
  test::write_file_bytes(dir / "f", {1, 2, 3, 4});
  auto f = MappedFile::open(dir / "f");
  EXPECT_EQ(f->slice(1, 3, "x").size(), 3u);
  EXPECT_THROW(f->slice(2, 3, "x"), FormatError);
  EXPECT_THROW(f->slice(~0ull, 2, "x"), FormatError);  // offset + size overflows
  ByteReader r(f->bytes(), f->path());
  EXPECT_EQ(r.u16("a"), 0x0201);
  try {
    r.u32("field.name");
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_EQ(e.field(), "field.name");
    EXPECT_EQ(e.offset(), 2u);
  }
}

TEST(MappedFile, MissingFileNamesThePath) {
  try {
    MappedFile::open("/no/such/file.safetensors");
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_EQ(e.file(), "/no/such/file.safetensors");
  }
}

}  // namespace
}  // namespace gptoss

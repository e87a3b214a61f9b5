// Inputs that shrink while they are mapped: reads, conversions and checksums give a FormatError
// naming the file ("file shrank while being read"), never SIGBUS, and no output appears.
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <functional>

#include "convert/model_io.h"
#include "formats/core/error.h"
#include "formats/core/mapped_file.h"
#include "formats/core/tensor_source.h"
#include "tests/test_support.h"
#include "verify/canonical_digest.h"

namespace gptoss::test {
namespace {
namespace fs = std::filesystem;

void expect_shrink_error(const std::function<void()>& code, const fs::path& file) {
  try {
    code();
    ADD_FAILURE() << "no error";
  } catch (const FormatError& e) {
    EXPECT_EQ(fs::path(e.file()).filename(), file.filename()) << e.what();
    EXPECT_NE(std::string(e.what()).find("shrank while being read"), std::string::npos) << e.what();
  }
}

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> out;
  if (fs::exists(dir))
    for (const auto& e : fs::recursive_directory_iterator(dir)) out.push_back(e.path());
  return out;
}

TEST(ShrinkingInput, MappedReadPastTheNewEndIsAFormatError) {
  TempDir dir;
  const auto path = dir / "big.bin";
  write_file_bytes(path, std::vector<uint8_t>(1u << 20, 7));
  const auto file = MappedFile::open(path);
  const MappedSource source(file, file->slice(0, file->size(), "all"));
  std::vector<uint8_t> out(4096);
  source.read(0, out);  // intact: reads the bytes
  EXPECT_EQ(out[100], 7);
  EXPECT_FALSE(file->shrank());
  ASSERT_EQ(::truncate(path.c_str(), 8192), 0);
  expect_shrink_error([&] { source.read(512u << 10, out); }, path);
  EXPECT_TRUE(file->shrank());
  expect_shrink_error([&] { file->check_intact(); }, path);
  // Zero-copy views (hashing, streaming) do not fault either; the next check reports it.
  uint64_t sum = 0;
  for (uint8_t v : file->bytes().subspan(900u << 10, 4096)) sum += v;
  EXPECT_EQ(sum, 0u);
}

TEST(ShrinkingInput, TruncationInsideTheLastPageIsNoticedByTheCheck) {
  TempDir dir;
  const auto path = dir / "small.bin";
  write_file_bytes(path, std::vector<uint8_t>(3000, 5));
  const auto file = MappedFile::open(path);
  const uint64_t events = MappedFile::shrink_events();
  ASSERT_EQ(::truncate(path.c_str(), 1000), 0);
  EXPECT_FALSE(file->shrank());  // no fault: the page is still backed
  expect_shrink_error([&] { file->check_intact(); }, path);
  expect_shrink_error([&] { MappedFile::throw_if_shrunk_since(events); }, path);
}

TEST(ShrinkingInput, UnrelatedSigbusStillKills) {
  // The guard only handles faults inside registered mappings: another SIGBUS keeps its effect.
  // (Killed by SIGBUS; under ASan, whose handler comes after ours, a report and exit status 1.)
  EXPECT_DEATH(::raise(SIGBUS), "");
}

TEST(ShrinkingInput, ConversionStopsAndWritesNothing) {
  TempDir dir;
  fs::copy(preset_a_checkpoint() / "hf", dir / "hf", fs::copy_options::recursive);
  fs::path shard;
  for (const auto& e : fs::directory_iterator(dir / "hf"))
    if (e.path().extension() == ".safetensors" && (shard.empty() || fs::file_size(e.path()) > fs::file_size(shard)))
      shard = e.path();
  ASSERT_FALSE(shard.empty());
  const CanonicalModel model = load_model(dir / "hf");
  ASSERT_EQ(::truncate(shard.c_str(), static_cast<off_t>(fs::file_size(shard) / 3)), 0);
  WriteOptions options;
  expect_shrink_error([&] { write_model(model, dir / "out", options); }, shard);
  EXPECT_TRUE(files_in(dir / "out").empty() || [&] {
    for (const auto& f : files_in(dir / "out"))
      if (f.extension() == ".safetensors" || f.filename().string().find(".tmp-") != std::string::npos) return false;
    return true;
  }()) << "partial output left behind";
  // Loading it again sees the short file and refuses it as truncated.
  EXPECT_THROW(load_model(dir / "hf"), FormatError);
}

TEST(ShrinkingInput, ChecksumsOfAShrunkModelAreAnError) {
  TempDir dir;
  fs::copy(preset_a_checkpoint() / "hf", dir / "hf", fs::copy_options::recursive);
  const CanonicalModel model = load_model(dir / "hf");
  fs::path shard;
  for (const auto& e : fs::directory_iterator(dir / "hf"))
    if (e.path().extension() == ".safetensors") shard = e.path();
  ASSERT_EQ(::truncate(shard.c_str(), 4096), 0);
  expect_shrink_error([&] { (void)canonical_digests(model, 1); }, shard);
}

}  // namespace
}  // namespace gptoss::test

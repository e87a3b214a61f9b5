// Container detection, the tensors each container file lists and the files of a model: the one
// place (convert/model_io) that conversion and verify both go through.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>

#include "convert/model_io.h"
#include "formats/core/error.h"
#include "formats/gguf/gguf_file.h"
#include "formats/gguf/gguf_writer.h"
#include "formats/modelbin/modelbin_file.h"
#include "formats/safetensors/safetensors_checkpoint.h"
#include "formats/safetensors/safetensors_writer.h"
#include "tests/modelbin/tiny_modelbin.h"
#include "tests/test_support.h"

namespace gptoss::test {
namespace {
namespace fs = std::filesystem;

constexpr uint32_t kGgmlF32 = 0;

GgufTensorEntry gguf_entry(std::string name, std::vector<uint64_t> ne, uint8_t fill) {
  uint64_t elements = 1;
  for (uint64_t d : ne) elements *= d;
  return {std::move(name), kGgmlF32, std::move(ne), owned_bytes(std::vector<uint8_t>(elements * 4, fill))};
}

void write_tiny_gguf(const fs::path& path) {
  GgufMetadata metadata;
  metadata.add_string("general.architecture", "test");
  write_gguf(path, metadata, {gguf_entry("a", {8}, 1), gguf_entry("bb", {4, 3}, 2)});
}

SafetensorsEntry st_entry(std::string name, std::vector<uint64_t> shape, uint8_t fill) {
  SafetensorsEntry e{std::move(name), DType::U8, std::move(shape), {}};
  e.data = owned_bytes(std::vector<uint8_t>(safetensors_entry_bytes(e), fill));
  return e;
}


std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const FormatError& e) {
    return e.what();
  }
  return "(no FormatError)";
}

TEST(ContainerDetection, EachContainerByItsLeadingBytes) {
  TempDir dir;
  // The magic decides, whatever the name.
  write_tiny_gguf(dir / "gguf.bin");
  write_file_bytes(dir / "model.gguf", tiny_modelbin_bytes(dir.path()));
  write_safetensors(dir / "x.safetensors", {st_entry("t", {4}, 7)});
  write_file_text(dir / "config.json", "{}");
  write_file_text(dir / "short.bin", "GG");
  EXPECT_EQ(detect_file_format(dir / "gguf.bin"), ModelFormat::Gguf);
  EXPECT_EQ(detect_file_format(dir / "model.gguf"), ModelFormat::ModelBin);
  EXPECT_EQ(detect_file_format(dir / "x.safetensors"), ModelFormat::Safetensors);  // no magic: by its name
  EXPECT_EQ(detect_file_format(dir / "config.json"), std::nullopt);
  EXPECT_EQ(detect_file_format(dir / "short.bin"), std::nullopt);
  EXPECT_NE(error_of([&] { detect_file_format(dir / "absent.gguf"); }).find("cannot open"), std::string::npos);

  // A model path: a folder is a checkpoint; a file must be one of ours.
  EXPECT_EQ(detect_input_format(dir.path()), ModelFormat::Safetensors);
  EXPECT_EQ(detect_input_format(dir / "gguf.bin"), ModelFormat::Gguf);
  EXPECT_EQ(detect_input_format(dir / "model.gguf"), ModelFormat::ModelBin);
  EXPECT_NE(error_of([&] { detect_input_format(dir / "config.json"); }).find("unknown leading bytes"),
            std::string::npos);
}

TEST(StoredTensors, EachContainerListsItsTensorsWithAbsoluteRanges) {
  TempDir dir;
  write_tiny_gguf(dir / "m.gguf");
  write_file_bytes(dir / "m.bin", tiny_modelbin_bytes(dir.path()));
  write_safetensors(dir / "m.safetensors", {st_entry("second", {3}, 2), st_entry("first", {5}, 1)});
  write_file_text(dir / "config.json", "{}");

  // Each range holds the tensor's own bytes (every tensor was filled with one value).
  auto check_fill = [&](const fs::path& file, const std::vector<StoredTensorRange>& tensors,
                        const std::vector<uint8_t>& fills) {
    const auto bytes = read_file_bytes(file);
    ASSERT_EQ(tensors.size(), fills.size()) << file;
    for (size_t i = 0; i < tensors.size(); ++i) {
      ASSERT_LE(tensors[i].offset + tensors[i].size, bytes.size()) << tensors[i].name;
      for (uint64_t k = 0; k < tensors[i].size; ++k)
        ASSERT_EQ(bytes[tensors[i].offset + k], fills[i]) << file << ": " << tensors[i].name << " byte " << k;
    }
  };

  const auto st = stored_tensors(dir / "m.safetensors");
  ASSERT_EQ(st.size(), 2u);
  EXPECT_EQ(st[0].name, "first");  // data order (the writer sorts by name within a dtype)
  EXPECT_EQ(st[1].name, "second");
  EXPECT_EQ(st[0].size, 5u);
  check_fill(dir / "m.safetensors", st, {1, 2});

  const auto gguf = stored_tensors(dir / "m.gguf");
  ASSERT_EQ(gguf.size(), 2u);
  EXPECT_EQ(gguf[0].name, "a");
  EXPECT_EQ(gguf[1].name, "bb");
  EXPECT_EQ(gguf[1].size, 48u);
  EXPECT_EQ(gguf[0].offset, GgufFile::open(dir / "m.gguf").data_offset());
  check_fill(dir / "m.gguf", gguf, {1, 2});

  const auto bin = stored_tensors(dir / "m.bin");
  const auto regions = modelbin::ModelBinFile::open(dir / "m.bin").layout().write_order();
  ASSERT_EQ(bin.size(), regions.size());
  std::vector<uint8_t> fills;
  for (size_t i = 0; i < regions.size(); ++i) {
    EXPECT_EQ(bin[i].name, regions[i].name);
    fills.push_back(static_cast<uint8_t>(i + 1));  // tiny_modelbin_bytes fills region i with i + 1
  }
  check_fill(dir / "m.bin", bin, fills);

  EXPECT_TRUE(stored_tensors(dir / "config.json").empty());
}

TEST(ModelFiles, ShardsAreTheOnesTheReaderReads) {
  TempDir dir;
  write_sharded_safetensors(dir.path(), {st_entry("a", {4}, 1), st_entry("b", {4}, 2)}, 4);
  write_file_text(dir / "config.json", "{}");
  // A file the index does not name is not part of the checkpoint: the reader never opens it.
  write_safetensors(dir / "model-old.safetensors", {st_entry("stale", {4}, 3)});
  write_file_text(dir / "README.md", "notes");

  const auto files = model_files(dir.path());
  const std::vector<fs::path> expected = {dir / "config.json", dir / "model-00001-of-00002.safetensors",
                                          dir / "model-00002-of-00002.safetensors",
                                          dir / "model.safetensors.index.json"};
  EXPECT_EQ(files, expected);
  const auto ck = SafetensorsCheckpoint::open(dir.path());
  ASSERT_EQ(ck.files().size(), 2u);
  EXPECT_EQ(fs::path(ck.files()[0]->path()), expected[1]);
  EXPECT_EQ(fs::path(ck.files()[1]->path()), expected[2]);
  EXPECT_EQ(ck.shards().index_total_size, 8);

  // Without an index, every *.safetensors of the folder, as the reader reads them.
  fs::remove(dir / "model.safetensors.index.json");
  const std::vector<fs::path> unindexed = {dir / "config.json", dir / "model-00001-of-00002.safetensors",
                                           dir / "model-00002-of-00002.safetensors", dir / "model-old.safetensors"};
  EXPECT_EQ(model_files(dir.path()), unindexed);

  // A model spec has no files; a single file is itself.
  EXPECT_TRUE(model_files("synth:20b").empty());
  EXPECT_EQ(model_files(dir / "model-old.safetensors"), std::vector<fs::path>{dir / "model-old.safetensors"});
}

TEST(ModelFiles, AShardTheIndexNamesButTheFolderLacksIsAnError) {
  TempDir dir;
  write_sharded_safetensors(dir.path(), {st_entry("a", {4}, 1), st_entry("b", {4}, 2)}, 4);
  fs::remove(dir / "model-00002-of-00002.safetensors");
  const auto files = model_files(dir.path());
  ASSERT_EQ(std::count(files.begin(), files.end(), dir / "model-00002-of-00002.safetensors"), 1);
  EXPECT_NE(error_of([&] { stored_tensors(dir / "model-00002-of-00002.safetensors"); }).find("cannot open"),
            std::string::npos);
}

TEST(ModelFiles, AnyShardOfASplitGgufListsTheSet) {
  TempDir dir;
  GgufMetadata metadata;
  metadata.add_string("general.architecture", "test");
  const auto names = write_gguf_split(dir / "m.gguf", metadata, {gguf_entry("a", {8}, 1), gguf_entry("b", {8}, 2)}, 32);
  ASSERT_EQ(names.size(), 2u);
  const std::vector<fs::path> expected = {dir / names[0], dir / names[1]};
  EXPECT_EQ(model_files(dir / names[1]), expected);
  EXPECT_EQ(stored_tensors(dir / names[1]).at(0).name, "b");
}

}  // namespace
}  // namespace gptoss::test

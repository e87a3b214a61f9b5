// The ordered parallel chunk pipeline on its own: the same bytes for any number of threads, a
// bounded number of chunks in flight, the first error in output order, every input page released.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <stdexcept>

#include "formats/core/atomic_file.h"
#include "formats/core/chunk_pipeline.h"
#include "formats/gguf/gguf_writer.h"
#include "tests/test_support.h"

namespace gptoss::test {
namespace {

uint8_t pattern(uint8_t tag, uint64_t i) { return static_cast<uint8_t>(i * 131 + (i >> 11) + tag); }

// Rows whose bytes are pattern(tag, index); counts produce() calls, records releases, and can
// throw when asked for a given row.
class PatternRows final : public RowSource {
 public:
  PatternRows(uint64_t rows, uint64_t row_bytes, uint8_t tag) : RowSource(rows, row_bytes), tag_(tag) {}
  std::optional<uint64_t> throw_at_row;
  mutable std::atomic<uint64_t> produced{0};
  mutable std::mutex mutex;
  mutable std::vector<std::pair<uint64_t, uint64_t>> released;

  std::vector<uint8_t> expected() const {
    std::vector<uint8_t> out(size());
    for (uint64_t i = 0; i < out.size(); ++i) out[i] = pattern(tag_, i);
    return out;
  }
  void release_range(uint64_t offset, uint64_t size) const override {
    std::lock_guard lock(mutex);
    released.emplace_back(offset, size);
  }

 protected:
  void produce(uint64_t first_row, uint64_t count, uint8_t* out) const override {
    ++produced;
    if (throw_at_row && *throw_at_row >= first_row && *throw_at_row < first_row + count)
      throw std::runtime_error("row " + std::to_string(*throw_at_row) + " of tag " + std::to_string(tag_));
    for (uint64_t i = 0; i < count * row_bytes(); ++i) out[i] = pattern(tag_, first_row * row_bytes() + i);
  }

 private:
  uint8_t tag_;
};

constexpr uint64_t kChunk = 64 << 10;

// Items of awkward sizes: empty, one odd row, rows that do not divide the chunk, a view.
std::vector<PipelineItem> awkward_items(std::vector<uint8_t>& expected) {
  std::vector<PipelineItem> items;
  auto add_rows = [&](uint64_t rows, uint64_t row_bytes, uint8_t tag) {
    auto source = std::make_shared<PatternRows>(rows, row_bytes, tag);
    const auto bytes = source->expected();
    expected.insert(expected.end(), bytes.begin(), bytes.end());
    items.push_back({"rows " + std::to_string(tag), source});
  };
  add_rows(0, 7, 1);
  add_rows(1, 1531, 2);
  add_rows(kChunk / 1531 * 3 + 17, 1531, 3);  // 3+ chunks, each a whole number of rows
  add_rows(2, kChunk + 5, 4);                 // rows larger than a chunk
  add_rows(kChunk, 1, 5);                     // exactly one chunk
  std::vector<uint8_t> view(3 * kChunk + 3);
  for (uint64_t i = 0; i < view.size(); ++i) view[i] = pattern(6, i);
  expected.insert(expected.end(), view.begin(), view.end());
  items.push_back({"view", owned_bytes(view)});
  add_rows(1000, 3, 7);
  return items;
}

std::vector<uint8_t> write_through(const std::filesystem::path& path, std::vector<PipelineItem> items,
                                   const PipelineOptions& options) {
  {
    OrderedChunkPipeline pipeline(std::move(items), options);
    AtomicFileWriter out(path);
    while (pipeline.items_written() < pipeline.item_count()) pipeline.write_next(out);
    out.commit();
  }
  return read_file_bytes(path);
}

TEST(ChunkPipeline, SameBytesForAnyNumberOfThreads) {
  TempDir dir;
  for (unsigned threads : {1u, 2u, 3u, 8u, 0u}) {
    std::vector<uint8_t> expected;
    auto items = awkward_items(expected);
    PipelineOptions options;
    options.threads = threads;
    options.chunk_bytes = kChunk;
    EXPECT_EQ(write_through(dir / "out", std::move(items), options), expected) << threads << " threads";
  }
}

TEST(ChunkPipeline, ChunksInFlightStayWithinThePool) {
  TempDir dir;
  for (unsigned threads : {2u, 8u}) {
    auto source = std::make_shared<PatternRows>(4096, 1000, 9);  // 4 MB in rows of 1000 bytes
    PipelineOptions options;
    options.threads = threads;
    options.chunk_bytes = 16000;  // 16 rows: 256 chunks
    uint64_t written = 0, worst = 0;
    options.progress = [&](const std::string&, uint64_t, uint64_t) {
      ++written;
      worst = std::max(worst, source->produced.load() - written);
    };
    const auto bytes = write_through(dir / "out", {{"rows", source}}, options);
    EXPECT_EQ(bytes, source->expected());
    EXPECT_EQ(written, 256u);
    EXPECT_EQ(source->produced.load(), 256u);  // each chunk produced once, as whole rows
    // Produced but not yet written: never more than the pool (the chunk just written is counted
    // as written).
    EXPECT_LE(worst, OrderedChunkPipeline::chunks_in_flight(threads)) << threads << " threads";
  }
  EXPECT_EQ(OrderedChunkPipeline::chunks_in_flight(1), 1u);
  EXPECT_EQ(OrderedChunkPipeline::chunks_in_flight(8), 18u);
}

TEST(ChunkPipeline, EveryInputByteIsReleasedOnceUsed) {
  TempDir dir;
  auto source = std::make_shared<PatternRows>(700, 1531, 3);
  PipelineOptions options;
  options.threads = 4;
  options.chunk_bytes = kChunk;
  write_through(dir / "out", {{"rows", source}}, options);
  // Chunk by chunk as they are produced, then the whole item once more (the pages on chunk borders).
  std::vector<bool> covered(source->size());
  for (const auto& [offset, size] : source->released)
    for (uint64_t i = offset; i < offset + size; ++i) covered[i] = true;
  EXPECT_EQ(std::count(covered.begin(), covered.end(), false), 0);
  EXPECT_EQ(source->released.back(), std::make_pair(uint64_t{0}, source->size()));
  EXPECT_EQ(source->released.size(), (source->size() + kChunk / 1531 * 1531 - 1) / (kChunk / 1531 * 1531) + 1);
}

TEST(ChunkPipeline, TheFirstErrorInOutputOrderIsTheOneThrown) {
  TempDir dir;
  for (unsigned threads : {1u, 8u}) {
    auto a = std::make_shared<PatternRows>(100, 1000, 1);
    auto b = std::make_shared<PatternRows>(100, 1000, 2);
    auto c = std::make_shared<PatternRows>(10, 1000, 3);
    b->throw_at_row = 50;  // b's third chunk
    c->throw_at_row = 0;   // c's only chunk: within the pool's reach, so produced (and failed) early
    std::vector<GgufTensorEntry> tensors = {{"a", 0, {25000}, a}, {"b", 0, {25000}, b}, {"c", 0, {2500}, c}};
    PipelineOptions options;
    options.threads = threads;
    options.chunk_bytes = 20000;
    try {
      write_gguf(dir / "x.gguf", GgufMetadata(), tensors, 32, options);
      ADD_FAILURE() << "no error";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "row 50 of tag 2") << threads << " threads";
    }
    EXPECT_FALSE(std::filesystem::exists(dir / "x.gguf"));  // nothing half-written
    EXPECT_TRUE(std::filesystem::is_empty(dir.path()));     // no temp file either
  }
}

TEST(ChunkPipeline, DataOfTheWrongSizeIsRefusedBeforeAnythingIsWritten) {
  TempDir dir;
  auto rows = std::make_shared<PatternRows>(10, 4, 1);
  EXPECT_THROW(write_gguf(dir / "x.gguf", GgufMetadata(), {{"t", 0, {9}, rows}}), std::invalid_argument);
  EXPECT_EQ(rows->produced.load(), 0u);
  EXPECT_THROW(write_gguf(dir / "x.gguf", GgufMetadata(), {{"t", 0, {10}, nullptr}}), std::invalid_argument);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

}  // namespace
}  // namespace gptoss::test

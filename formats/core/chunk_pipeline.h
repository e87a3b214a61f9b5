#pragma once
// The ordered parallel chunk pipeline every writer streams tensor data through (GGUF and its split
// sets, model.bin, safetensors and its shards). The items (tensors, in output order) are cut into
// chunks: ranges of whole rows of at most chunk_bytes, so a large tensor is spread over every
// thread too. Worker threads take the chunks in order and produce each into a buffer from a pool
// of chunks_in_flight() buffers; the writing thread takes them in output order and writes them.
//
// - The output bytes are the same for any number of threads: every chunk's bytes are a function
//   of its source range alone, and the writer puts them in place in order.
// - Memory is bounded by the chunks in flight, not by a tensor per thread: a worker takes a chunk
//   only while fewer than chunks_in_flight() chunks are produced and not yet written. Each holds
//   a buffer of at most chunk_bytes, or, for a chunk whose bytes lie in memory (a mapped input
//   tensor written as stored), the mapped pages of its view: such a chunk is not copied, its
//   worker only fetches and maps the pages ahead of the writer (TensorSource::will_need), which
//   writes straight from the mapping.
// - Input pages are released as soon as they are used (TensorSource::release_range): a produced
//   chunk's inputs when it is produced, a view's pages once written.
// - The first error in output order is rethrown by write_next(), as a single thread would have
//   thrown it; the workers are stopped by the destructor.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "formats/core/tensor_source.h"

namespace gptoss {

class AtomicFileWriter;

struct PipelineOptions {
  unsigned threads = 0;  // workers; 0 = one per core; 1 = every chunk on the writing thread
  uint64_t chunk_bytes = 4u << 20;
  // Called on the writing thread after every chunk: the item's label, its bytes written so far,
  // its size.
  std::function<void(const std::string& label, uint64_t done, uint64_t size)> progress;
};

struct PipelineItem {
  std::string label;  // for progress and messages
  TensorSourcePtr source;
};

class OrderedChunkPipeline {
 public:
  OrderedChunkPipeline(std::vector<PipelineItem> items, const PipelineOptions& options);
  ~OrderedChunkPipeline();
  OrderedChunkPipeline(const OrderedChunkPipeline&) = delete;
  OrderedChunkPipeline& operator=(const OrderedChunkPipeline&) = delete;

  // Writes all bytes of the next item to `out`, in order; call once per item, in item order (the
  // items of one pipeline may go to several files, e.g. the shards of a split output).
  void write_next(AtomicFileWriter& out);
  size_t items_written() const { return next_item_; }
  size_t item_count() const { return items_.size(); }

  // Chunk buffers that can exist at once with `threads` workers (0 = one per core).
  static size_t chunks_in_flight(unsigned threads);

 private:
  struct Chunk {
    size_t item;
    uint64_t offset;
    uint64_t size;
  };
  struct Slot;
  struct Workers;
  void produce(const Chunk& chunk, Slot& slot) const;
  void stop_workers();

  std::vector<PipelineItem> items_;
  PipelineOptions options_;
  std::vector<Chunk> chunks_;
  std::vector<size_t> first_chunk_;  // per item, and one past the end
  size_t next_item_ = 0;
  std::unique_ptr<Slot> inline_slot_;  // one thread: the writing thread produces every chunk
  std::unique_ptr<Workers> workers_;
};

}  // namespace gptoss

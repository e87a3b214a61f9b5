#include "formats/core/chunk_pipeline.h"

#include <condition_variable>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "formats/core/atomic_file.h"
#include "formats/core/parallel_for.h"

namespace gptoss {

struct OrderedChunkPipeline::Slot {
  std::vector<uint8_t> buffer;     // keeps its capacity from chunk to chunk
  std::span<const uint8_t> bytes;  // the chunk: into `buffer`, or a view of the source
  std::exception_ptr error;
  bool ready = false;              // guarded by Workers::mutex
};

// Tickets are chunk indices, taken in order. Ticket t uses slot t % slots.size() and is taken only
// once ticket t - slots.size() has been written, so the chunks in flight are always the
// slots.size() chunks from the writer's position on: the writer never waits for a chunk that
// waits for a buffer.
struct OrderedChunkPipeline::Workers {
  std::mutex mutex;
  std::condition_variable work;   // workers: a ticket became available, or stop
  std::condition_variable ready;  // the writer: a slot became ready
  std::vector<Slot> slots;
  size_t next_ticket = 0;
  size_t next_write = 0;
  bool stop = false;
  std::vector<std::thread> threads;
};

size_t OrderedChunkPipeline::chunks_in_flight(unsigned threads) {
  const unsigned n = resolve_threads(threads);
  return n == 1 ? 1 : 2 * static_cast<size_t>(n) + 2;
}

OrderedChunkPipeline::OrderedChunkPipeline(std::vector<PipelineItem> items, const PipelineOptions& options)
    : items_(std::move(items)), options_(options) {
  if (options_.chunk_bytes == 0) throw std::invalid_argument("chunk pipeline: chunk_bytes must not be 0");
  for (size_t i = 0; i < items_.size(); ++i) {
    first_chunk_.push_back(chunks_.size());
    const TensorSource& source = *items_[i].source;
    // Whole rows per chunk where a row fits, so no row is produced twice.
    const uint64_t unit = std::max<uint64_t>(source.granularity(), 1);
    const uint64_t step = unit <= options_.chunk_bytes ? options_.chunk_bytes / unit * unit : unit;
    for (uint64_t offset = 0; offset < source.size(); offset += step)
      chunks_.push_back({i, offset, std::min(step, source.size() - offset)});
  }
  first_chunk_.push_back(chunks_.size());

  const unsigned threads = resolve_threads(options_.threads);
  if (threads == 1 || chunks_.empty()) {
    inline_slot_ = std::make_unique<Slot>();
    return;
  }
  workers_ = std::make_unique<Workers>();
  Workers& w = *workers_;
  w.slots.resize(std::min(chunks_in_flight(threads), chunks_.size()));
  auto run = [this, &w] {
    std::unique_lock lock(w.mutex);
    for (;;) {
      w.work.wait(lock, [&] {
        return w.stop || w.next_ticket >= chunks_.size() || w.next_ticket < w.next_write + w.slots.size();
      });
      if (w.stop || w.next_ticket >= chunks_.size()) return;
      const size_t ticket = w.next_ticket++;
      Slot& slot = w.slots[ticket % w.slots.size()];
      lock.unlock();
      try {
        produce(chunks_[ticket], slot);
      } catch (...) {
        slot.error = std::current_exception();
      }
      lock.lock();
      slot.ready = true;
      w.ready.notify_one();
    }
  };
  const size_t count = std::min<size_t>(threads, chunks_.size());
  try {
    for (size_t t = 0; t < count; ++t) w.threads.push_back(start_worker(run));
  } catch (...) {
    stop_workers();  // the threads already started
    throw;
  }
}

OrderedChunkPipeline::~OrderedChunkPipeline() { stop_workers(); }

void OrderedChunkPipeline::stop_workers() {
  if (!workers_) return;
  {
    std::lock_guard lock(workers_->mutex);
    workers_->stop = true;
  }
  workers_->work.notify_all();
  for (auto& t : workers_->threads) t.join();
  workers_.reset();
}

void OrderedChunkPipeline::produce(const Chunk& chunk, Slot& slot) const {
  const TensorSource& source = *items_[chunk.item].source;
  source.will_need(chunk.offset, chunk.size);
  if (auto view = source.contiguous()) {
    slot.bytes = view->subspan(chunk.offset, chunk.size);
    return;
  }
  slot.buffer.resize(chunk.size);
  source.read(chunk.offset, slot.buffer);
  slot.bytes = std::span<const uint8_t>(slot.buffer.data(), chunk.size);
  source.release_range(chunk.offset, chunk.size);  // its input is consumed: only the buffer stays
}

void OrderedChunkPipeline::write_next(AtomicFileWriter& out) {
  if (next_item_ >= items_.size())
    throw std::logic_error("chunk pipeline: all " + std::to_string(items_.size()) + " items are written already");
  const PipelineItem& item = items_[next_item_];
  const TensorSource& source = *item.source;
  for (size_t c = first_chunk_[next_item_]; c < first_chunk_[next_item_ + 1]; ++c) {
    const Chunk& chunk = chunks_[c];
    Slot* slot = inline_slot_.get();
    if (slot) {
      produce(chunk, *slot);
    } else {
      Workers& w = *workers_;
      slot = &w.slots[c % w.slots.size()];
      std::unique_lock lock(w.mutex);
      w.ready.wait(lock, [&] { return slot->ready; });
      if (slot->error) std::rethrow_exception(slot->error);
    }
    out.write(slot->bytes);
    if (slot->bytes.data() != slot->buffer.data()) source.release_range(chunk.offset, chunk.size);  // a view
    if (!inline_slot_) {
      Workers& w = *workers_;
      {
        std::lock_guard lock(w.mutex);
        slot->ready = false;
        slot->bytes = {};
        ++w.next_write;
      }
      w.work.notify_one();
    }
    if (options_.progress) options_.progress(item.label, chunk.offset + chunk.size, source.size());
  }
  // Whole pages on the boundaries between chunks were kept for the neighbour: drop them now.
  source.release_pages();
  ++next_item_;
}

}  // namespace gptoss

#pragma once
// The one way verify spreads per-item work (hashing, digests, value scans) over threads.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace gptoss {

// Calls fn(i) for every i in [0, count) on `threads` threads (0: one per core), each thread taking
// the next index in turn, so items of very different sizes still balance. The first exception any
// call throws is rethrown once every thread has stopped; the other items are still processed.
template <class Fn>
void parallel_for(size_t count, unsigned threads, Fn&& fn) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  std::atomic<size_t> next{0};
  std::mutex error_mutex;
  std::exception_ptr error;
  auto worker = [&] {
    for (size_t i = next++; i < count; i = next++) {
      try {
        fn(i);
      } catch (...) {
        std::lock_guard lock(error_mutex);
        if (!error) error = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (auto& thread : pool) thread.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace gptoss

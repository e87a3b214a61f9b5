#pragma once
// The one way the toolkit spreads independent items (hashing, digests, value scans) over threads.
// Streams that must keep an order (writing a file) use OrderedChunkPipeline (chunk_pipeline.h).
#include <sched.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace gptoss {

// The cores the calling thread may run on: its CPU affinity mask (taskset, cpusets, a container's
// --cpuset-cpus), which std::thread::hardware_concurrency() ignores (it counts the host's cores),
// else hardware_concurrency(); at least 1. A CPU-time quota (cgroup cpu.max, `docker --cpus`)
// without a cpuset is not seen.
inline unsigned available_cores() {
#if defined(__linux__) && defined(CPU_COUNT_S)
  // Masks larger than cpu_set_t's 1024 CPUs: sched_getaffinity says EINVAL until the set is large enough.
  for (int cpus = CPU_SETSIZE; cpus <= (1 << 16); cpus *= 2) {
    cpu_set_t* set = CPU_ALLOC(cpus);
    if (!set) break;
    const size_t size = CPU_ALLOC_SIZE(cpus);
    CPU_ZERO_S(size, set);
    const bool read = sched_getaffinity(0, size, set) == 0;
    const bool too_small = !read && errno == EINVAL;
    const int count = read ? CPU_COUNT_S(size, set) : 0;
    CPU_FREE(set);
    if (count > 0) return static_cast<unsigned>(count);
    if (!too_small) break;
  }
#endif
  return std::max(1u, std::thread::hardware_concurrency());
}

// `-j N` as every tool takes it: 0 means one thread per available core (available_cores()).
inline unsigned resolve_threads(unsigned requested) { return requested != 0 ? requested : available_cores(); }

// Signals sent to the process (Ctrl-C, kill) go to the thread that started the workers, whose
// handler (remove_temp_files_on_signals) and signal masks (commit_together) then behave as in a
// single-threaded program: a handler run on a worker would clean up while that thread goes on
// creating temp files beside it. Faults (SIGBUS of a shrunk mapped input, SIGSEGV) still go to
// the thread that caused them.
inline sigset_t signals_left_to_the_main_thread() {
  sigset_t set;
  sigfillset(&set);
  for (int fault : {SIGBUS, SIGSEGV, SIGFPE, SIGILL, SIGTRAP, SIGABRT}) sigdelset(&set, fault);
  return set;
}
// For the first line of a thread this code does not start itself (std::async's).
inline void leave_signals_to_the_main_thread() {
  const sigset_t set = signals_left_to_the_main_thread();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}
// A worker thread that holds those signals from its first instruction (a thread inherits its
// creator's mask, so the creator holds them while it starts the thread): a signal can never reach
// it in the moment before it would block them itself.
template <class Fn>
std::thread start_worker(Fn&& fn) {
  const sigset_t set = signals_left_to_the_main_thread();
  sigset_t previous;
  pthread_sigmask(SIG_BLOCK, &set, &previous);
  struct Restore {
    const sigset_t& mask;
    ~Restore() { pthread_sigmask(SIG_SETMASK, &mask, nullptr); }
  } restore{previous};
  return std::thread(std::forward<Fn>(fn));
}

// Calls fn(i) for every i in [0, count) on `threads` threads (0: one per core), each thread taking
// the next index in turn, so items of very different sizes still balance (put the largest first).
// The first exception any call throws is rethrown once every thread has stopped; the other items
// are still processed. One thread (or one item) runs on the calling thread.
template <class Fn>
void parallel_for(size_t count, unsigned threads, Fn&& fn) {
  threads = static_cast<unsigned>(std::min<size_t>(resolve_threads(threads), std::max<size_t>(count, 1)));
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
  for (unsigned t = 1; t < threads; ++t) pool.push_back(start_worker(worker));
  worker();
  for (auto& thread : pool) thread.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace gptoss

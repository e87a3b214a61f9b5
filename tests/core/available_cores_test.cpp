// The default of -j follows the CPUs the process may run on (its affinity mask: taskset, cpusets,
// a container's --cpuset-cpus), not the host's core count: a thread restricted to one or two CPUs
// resolves -j 0 to that many workers and that many chunks in flight.
#include <gtest/gtest.h>
#include <sched.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "formats/core/chunk_pipeline.h"
#include "formats/core/parallel_for.h"

namespace gptoss {
namespace {

struct Seen {
  int set_error = 0;  // errno of sched_setaffinity, 0 when it took
  unsigned restricted_cores = 0, restricted_default = 0, explicit_three = 0;
  size_t restricted_chunks = 0;
  unsigned restored_cores = 0;
};

// On a new thread (affinity is per thread on Linux; the test's own thread keeps its mask): the
// first `n` CPUs of `allowed` only, what -j resolves to then, and again with the mask restored.
Seen with_cpus(const std::vector<int>& allowed, size_t n) {
  Seen seen;
  std::thread([&] {
    cpu_set_t original;
    CPU_ZERO(&original);
    if (sched_getaffinity(0, sizeof original, &original) != 0) {
      seen.set_error = errno;
      return;
    }
    cpu_set_t restricted;
    CPU_ZERO(&restricted);
    for (size_t i = 0; i < n; ++i) CPU_SET(allowed[i], &restricted);
    if (sched_setaffinity(0, sizeof restricted, &restricted) != 0) {
      seen.set_error = errno;
      return;
    }
    seen.restricted_cores = available_cores();
    seen.restricted_default = resolve_threads(0);
    seen.explicit_three = resolve_threads(3);
    seen.restricted_chunks = OrderedChunkPipeline::chunks_in_flight(0);
    if (sched_setaffinity(0, sizeof original, &original) != 0) {
      seen.set_error = errno;
      return;
    }
    seen.restored_cores = available_cores();
  }).join();
  return seen;
}

TEST(AvailableCores, TheDefaultThreadCountFollowsTheAffinityMask) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) != 0)
    GTEST_SKIP() << "sched_getaffinity: " << std::strerror(errno) << " (more than " << CPU_SETSIZE << " CPUs?)";
  std::vector<int> allowed;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &mask)) allowed.push_back(cpu);
  ASSERT_FALSE(allowed.empty());
  const unsigned before = available_cores();
  EXPECT_EQ(before, allowed.size());
  EXPECT_EQ(resolve_threads(0), before);

  for (size_t n : {size_t{1}, size_t{2}}) {
    if (n > allowed.size()) continue;
    SCOPED_TRACE(std::to_string(n) + " of " + std::to_string(allowed.size()) + " CPUs");
    const Seen seen = with_cpus(allowed, n);
    ASSERT_EQ(seen.set_error, 0) << "sched_setaffinity: " << std::strerror(seen.set_error);
    EXPECT_EQ(seen.restricted_cores, n);
    EXPECT_EQ(seen.restricted_default, n);
    EXPECT_EQ(seen.explicit_three, 3u) << "-j 3 is -j 3 whatever the mask";
    EXPECT_EQ(seen.restricted_chunks, n == 1 ? 1 : 2 * n + 2);
    EXPECT_EQ(seen.restored_cores, before) << "the default follows the mask back";
  }
  EXPECT_EQ(available_cores(), before) << "the test's own thread kept its mask";
}

}  // namespace
}  // namespace gptoss

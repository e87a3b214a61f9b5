#pragma once
// Runs a piece of code in a forked child under a memory and a time limit, and reports how it
// ended and how much memory it used. The hostile-input tests use it so that a reader that
// allocates without bound or loops forever fails the test instead of taking the test binary (or
// the machine) down with it; gptoss-badinputs runs each row of its table in one to measure the
// row's peak memory and to count crashes.
#include <cstdint>
#include <functional>
#include <string>

namespace gptoss {

enum class ChildOutcome {
  FormatError,   // the code threw gptoss::FormatError (the expected result for bad input)
  Accepted,      // the code returned normally
  OtherError,    // it threw another exception
  OutOfMemory,   // std::bad_alloc under the memory limit
  TimedOut,      // killed by the alarm
  Crashed,       // any other signal (SIGSEGV, SIGBUS, SIGABRT from a sanitizer, ...)
};
const char* outcome_name(ChildOutcome outcome);

struct ChildResult {
  ChildOutcome outcome = ChildOutcome::Crashed;
  std::string message;  // what() of the exception, the signal, or (Accepted) what the code returned
  // Peak resident memory of the child (getrusage ru_maxrss) minus that of a child forked at the
  // same moment that does nothing: the memory the code itself made the process use.
  int64_t peak_memory_growth_kb = 0;
};

struct ChildLimits {
  uint64_t extra_address_space = 16ull << 20;  // RLIMIT_AS above the child's size at fork; 0: none
  unsigned seconds = 1;                        // SIGALRM after this many seconds of wall time
};

// True when built with AddressSanitizer, whose shadow memory makes RLIMIT_AS meaningless (the
// memory limit is then left to ASan's own allocator checks).
bool built_with_asan();

ChildResult run_in_child(const std::function<void()>& code, const ChildLimits& limits = {});
// The same for code that reports something back (ChildResult::message when it returns).
ChildResult run_in_child_reporting(const std::function<std::string()>& code, const ChildLimits& limits = {});

}  // namespace gptoss

#include "tools/gptoss-badinputs/child_process.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <new>
#include <stdexcept>

#include "formats/core/error.h"

namespace gptoss {
namespace {

uint64_t address_space_now() {
  std::ifstream statm("/proc/self/statm");
  uint64_t pages = 0;
  statm >> pages;
  return pages * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

}  // namespace

const char* outcome_name(ChildOutcome outcome) {
  switch (outcome) {
    case ChildOutcome::FormatError: return "FormatError";
    case ChildOutcome::Accepted: return "accepted";
    case ChildOutcome::OtherError: return "other exception";
    case ChildOutcome::OutOfMemory: return "out of memory";
    case ChildOutcome::TimedOut: return "timed out";
    case ChildOutcome::Crashed: return "crashed";
  }
  return "?";
}

bool built_with_asan() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

namespace {

// Waits for the child and returns its exit status and peak resident memory in KB.
int wait_with_peak_memory(pid_t pid, int64_t& peak_kb) {
  int status = 0;
  struct rusage usage {};
  while (::wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  peak_kb = usage.ru_maxrss;
  return status;
}

int64_t peak_memory_of_an_idle_child() {
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) ::_exit(0);
  int64_t peak_kb = 0;
  wait_with_peak_memory(pid, peak_kb);
  return peak_kb;
}

}  // namespace

ChildResult run_in_child(const std::function<void()>& code, const ChildLimits& limits) {
  return run_in_child_reporting([&] {
    code();
    return std::string();
  }, limits);
}

ChildResult run_in_child_reporting(const std::function<std::string()>& code, const ChildLimits& limits) {
  const int64_t baseline_kb = peak_memory_of_an_idle_child();
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::close(pipe_fds[0]);
    if (!built_with_asan() && limits.extra_address_space > 0) {
      const rlim_t cap = static_cast<rlim_t>(address_space_now() + limits.extra_address_space);
      struct rlimit rl {cap, cap};
      ::setrlimit(RLIMIT_AS, &rl);
    }
    ::alarm(limits.seconds);
    int code_out = 0;
    std::string message;
    try {
      message = code();
      code_out = 10;
    } catch (const FormatError& e) {
      code_out = 11;
      message = e.what();
    } catch (const std::bad_alloc& e) {
      code_out = 12;
      message = e.what();
    } catch (const std::exception& e) {
      code_out = 13;
      message = e.what();
    } catch (...) {
      code_out = 13;
      message = "unknown exception";
    }
    write_all(pipe_fds[1], message);
    ::_exit(code_out);
  }
  ::close(pipe_fds[1]);
  std::string message;
  char buffer[4096];
  for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;) message.append(buffer, static_cast<size_t>(n));
  ::close(pipe_fds[0]);
  int64_t peak_kb = 0;
  const int status = wait_with_peak_memory(pid, peak_kb);
  ChildResult result;
  result.message = message;
  result.peak_memory_growth_kb = peak_kb - baseline_kb;
  if (WIFSIGNALED(status)) {
    result.outcome = WTERMSIG(status) == SIGALRM ? ChildOutcome::TimedOut : ChildOutcome::Crashed;
    result.message = std::string("signal ") + ::strsignal(WTERMSIG(status));
    return result;
  }
  switch (WEXITSTATUS(status)) {
    case 10: result.outcome = ChildOutcome::Accepted; break;
    case 11: result.outcome = ChildOutcome::FormatError; break;
    case 12: result.outcome = ChildOutcome::OutOfMemory; break;
    case 13: result.outcome = ChildOutcome::OtherError; break;
    default:
      result.outcome = ChildOutcome::Crashed;  // a sanitizer report exits with 1 or 23
      result.message = "exit status " + std::to_string(WEXITSTATUS(status)) + " " + message;
  }
  return result;
}

}  // namespace gptoss

// peak_rss COMMAND ARGS...: runs the command and prints "peak_rss_kb N" (its getrusage high-water
// mark) on stderr, then exits with the command's status. A process's ru_maxrss also counts the
// memory of the process it was forked from (the kernel folds the pre-exec high-water mark in), so
// a test binary measures a CLI through this small parent rather than forking the CLI itself.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: peak_rss COMMAND ARGS...\n");
    return 2;
  }
  const pid_t pid = ::fork();
  if (pid < 0) return 2;
  if (pid == 0) {
    ::execvp(argv[1], argv + 1);
    std::perror(argv[1]);
    ::_exit(127);
  }
  int status = 0;
  struct rusage usage {};
  if (::wait4(pid, &status, 0, &usage) != pid) return 2;
  std::fprintf(stderr, "peak_rss_kb %ld\n", usage.ru_maxrss);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

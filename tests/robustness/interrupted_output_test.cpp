// Interrupted conversions leave the previous output untouched and no stray temp file after the
// next run: SIGINT/SIGTERM (the CLIs remove their temp files and die of the signal), SIGKILL (the
// next writer for the target sweeps the dead process's temp file), a file-size limit and a full
// disk (clear error, temp file removed).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "formats/core/atomic_file.h"
#include "formats/core/error.h"
#include "tests/test_support.h"

namespace gptoss::test {
namespace {
namespace fs = std::filesystem;

std::vector<std::string> temp_files(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".tmp-") != std::string::npos) out.push_back(e.path().filename().string());
  return out;
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// gptoss-convert INPUT OUTPUT -q in a child with stdout+stderr to `log`; `limit_bytes` sets
// RLIMIT_FSIZE when non-zero.
pid_t start_convert(const fs::path& input, const fs::path& output, const fs::path& log, uint64_t limit_bytes = 0) {
  const std::string tool = (tools_dir() / "gptoss-convert").string();
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    if (limit_bytes) {
      struct rlimit rl {limit_bytes, limit_bytes};
      ::setrlimit(RLIMIT_FSIZE, &rl);
    }
    ::execl(tool.c_str(), tool.c_str(), input.c_str(), output.c_str(), "-q", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// Waits until a temp file for the target appears (or the child ends): true when it appeared.
bool wait_for_temp(const fs::path& dir, pid_t pid) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    if (!temp_files(dir).empty()) return true;
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return false;
}

struct Target {
  TempDir dir;
  fs::path input;
  fs::path output;
  fs::path log;
  std::vector<uint8_t> old_bytes{'o', 'l', 'd', ' ', 'o', 'u', 't', 'p', 'u', 't'};
  explicit Target(const std::string& name) : input(preset_a_checkpoint() / "hf"), output(dir / name), log(dir / "log") {
    write_file_bytes(output, old_bytes);
  }
};

void interrupt_and_check(const std::string& name, int signal_number) {
  Target t(name);
  const pid_t pid = start_convert(t.input, t.output, t.log);
  ASSERT_TRUE(wait_for_temp(t.dir.path(), pid)) << "the conversion ended before its temp file was seen: " << slurp(t.log);
  ::kill(pid, signal_number);
  const int status = wait_for(pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << WEXITSTATUS(status) << ": " << slurp(t.log);
  EXPECT_EQ(WTERMSIG(status), signal_number);
  EXPECT_EQ(read_file_bytes(t.output), t.old_bytes) << "the old target changed";
  if (signal_number == SIGKILL) {
    EXPECT_EQ(temp_files(t.dir.path()).size(), 1u) << "SIGKILL cannot be handled: its temp file stays until the next run";
  } else {
    EXPECT_TRUE(temp_files(t.dir.path()).empty()) << "the signal handler left " << temp_files(t.dir.path()).front();
  }
  // The next run replaces the target and leaves no temp file, including the dead process's.
  const int again = wait_for(start_convert(t.input, t.output, t.log));
  ASSERT_TRUE(WIFEXITED(again) && WEXITSTATUS(again) == 0) << slurp(t.log);
  EXPECT_NE(read_file_bytes(t.output), t.old_bytes);
  EXPECT_TRUE(temp_files(t.dir.path()).empty());
}

TEST(InterruptedOutput, SigintDuringGgufConversion) {
  TOKENIZER_OR_SKIP();
  interrupt_and_check("model.gguf", SIGINT);
}
TEST(InterruptedOutput, SigtermDuringModelBinConversion) {
  TOKENIZER_OR_SKIP();
  interrupt_and_check("model.bin", SIGTERM);
}
TEST(InterruptedOutput, SigkillDuringGgufConversion) {
  TOKENIZER_OR_SKIP();
  interrupt_and_check("model.gguf", SIGKILL);
}
TEST(InterruptedOutput, SigkillDuringModelBinConversion) {
  TOKENIZER_OR_SKIP();
  interrupt_and_check("model.bin", SIGKILL);
}

TEST(InterruptedOutput, FileSizeLimitIsAClearErrorAndLeavesNothing) {
  TOKENIZER_OR_SKIP();
  Target t("model.gguf");
  const int status = wait_for(start_convert(t.input, t.output, t.log, 1u << 20));
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status) << " (SIGXFSZ not ignored?)";
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_NE(slurp(t.log).find("file too large"), std::string::npos) << slurp(t.log);
  EXPECT_EQ(read_file_bytes(t.output), t.old_bytes);
  EXPECT_TRUE(temp_files(t.dir.path()).empty());
}

TEST(InterruptedOutput, FullDiskIsAClearErrorAndLeavesNothing) {
  TOKENIZER_OR_SKIP();
  TempDir mount_point;
  if (::mount("tmpfs", mount_point.path().c_str(), "tmpfs", 0, "size=5m") != 0)
    GTEST_SKIP() << "cannot mount a 5 MB tmpfs here (" << std::strerror(errno) << ")";
  struct Unmount {
    fs::path p;
    ~Unmount() { ::umount2(p.c_str(), MNT_DETACH); }
  } unmount{mount_point.path()};
  const fs::path output = mount_point / "model.gguf";
  const std::vector<uint8_t> old_bytes{'o', 'l', 'd'};
  write_file_bytes(output, old_bytes);
  const fs::path log = mount_point.path().parent_path() / (mount_point.path().filename().string() + ".log");
  const int status = wait_for(start_convert(preset_a_checkpoint() / "hf", output, log));
  const std::string text = slurp(log);
  fs::remove(log);
  ASSERT_TRUE(WIFEXITED(status)) << text;
  EXPECT_EQ(WEXITSTATUS(status), 2) << text;
  EXPECT_NE(text.find("disk full"), std::string::npos) << text;
  EXPECT_EQ(read_file_bytes(output), old_bytes);
  EXPECT_TRUE(temp_files(mount_point.path()).empty());
}

TEST(InterruptedOutput, WriterSweepsTempFilesOfDeadProcessesOnly) {
  TempDir dir;
  const fs::path target = dir / "out.gguf";
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  wait_for(dead);
  const auto touch = [&](const std::string& name) { write_file_bytes(dir / name, {1}); };
  const std::string dead_temp = ".out.gguf.tmp-" + std::to_string(dead) + "-0123abcd";
  const std::string own_stale = ".out.gguf.tmp-" + std::to_string(::getpid()) + "-deadbeef";
  const std::string live_temp = ".out.gguf.tmp-" + std::to_string(::getppid()) + "-01234567";
  const std::string other_target = ".other.gguf.tmp-" + std::to_string(dead) + "-0123abcd";
  const std::string not_ours = ".out.gguf.tmp-notapid";
  for (const auto& n : {dead_temp, own_stale, live_temp, other_target, not_ours}) touch(n);
  {
    AtomicFileWriter writer(target);
    EXPECT_FALSE(fs::exists(dir / dead_temp));
    EXPECT_FALSE(fs::exists(dir / own_stale));
    EXPECT_TRUE(fs::exists(dir / live_temp));
    EXPECT_TRUE(fs::exists(dir / other_target));
    EXPECT_TRUE(fs::exists(dir / not_ours));
    EXPECT_TRUE(fs::exists(writer.temp_path()));
    EXPECT_EQ(remove_stale_temp_files(target), 0u) << "the live writer's own temp file is not stale";
    writer.write_u32(7);
    writer.commit();
  }
  EXPECT_EQ(read_file_bytes(target).size(), 4u);
}

TEST(InterruptedOutput, SignalHandlerRemovesLiveTempFilesInProcess) {
  TempDir dir;
  const pid_t pid = ::fork();
  if (pid == 0) {
    remove_temp_files_on_signals();
    AtomicFileWriter a(dir / "a.bin");
    AtomicFileWriter b(dir / "b.bin");
    a.write_zeros(100);
    ::raise(SIGINT);
    ::_exit(0);  // not reached
  }
  const int status = wait_for(pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGINT);
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

}  // namespace
}  // namespace gptoss::test

// Interrupted conversions leave the previous output untouched and no stray temp file after the
// next run: SIGINT/SIGTERM (the CLIs remove their temp files and die of the signal), SIGKILL (the
// next writer for the target sweeps the dead process's temp file), a file-size limit and a full
// disk (clear error, temp file removed). Every conversion reads preset a's BF16 GGUF (the test
// fixture): its tokenizer loads in a fraction of the time hf/'s 27 MB tokenizer.json takes, and
// what is asserted is about the output alone.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
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

// gptoss-convert INPUT OUTPUT -q [--max-shard-size N] in a child with stdout+stderr to `log`;
// `limit_bytes` sets RLIMIT_FSIZE when non-zero, `shard_bytes` splits the output when non-zero.
pid_t start_convert(const fs::path& input, const fs::path& output, const fs::path& log, uint64_t limit_bytes = 0,
                    uint64_t shard_bytes = 0) {
  const std::string shard_size = std::to_string(shard_bytes);
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
    if (shard_bytes)
      ::execl(tool.c_str(), tool.c_str(), input.c_str(), output.c_str(), "-q", "--max-shard-size", shard_size.c_str(),
              static_cast<char*>(nullptr));
    else
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

// Temp entries in `dir` and, one level down, inside its temp folders (a staged output folder).
std::vector<std::string> temp_files_within(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& name : temp_files(dir)) {
    out.push_back(name);
    std::error_code ec;
    if (fs::is_directory(dir / name, ec))
      for (const auto& inner : temp_files(dir / name)) out.push_back(name + "/" + inner);
  }
  return out;
}

// Waits until a temp file or folder for the target appears, and holds `fragment` in its path when
// one is given (or until the child ends): true when it appeared.
bool wait_for_temp(const fs::path& dir, pid_t pid, const std::string& fragment = "") {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    for (const auto& name : fragment.empty() ? temp_files(dir) : temp_files_within(dir))
      if (name.find(fragment) != std::string::npos) return true;
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
  explicit Target(const std::string& name) : input(preset_a_bf16_gguf()), output(dir / name), log(dir / "log") {
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

// Every file of a folder (or every file beside the target with a given prefix) with its bytes.
std::map<std::string, std::vector<uint8_t>> snapshot(const fs::path& dir, const std::string& prefix = "") {
  std::map<std::string, std::vector<uint8_t>> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename().string().starts_with(prefix))
      out[e.path().filename().string()] = read_file_bytes(e.path());
  return out;
}

// Preset a's embedding and unembedding are 25 MB each, the rest about 5 MB: 16 MB shards give a
// set of three or more files.
constexpr uint64_t kShardBytes = 16000000;

// Catching a conversion while its second file is written is a race with a window of one shard's
// write: on a loaded machine the polling thread can sleep through it, and the conversion ends
// before it is seen. Such an attempt proves nothing either way, so the tests set up a fresh folder
// and try again (`ended_first`), failing only when every one of kAttempts ended first.
constexpr int kAttempts = 10;
// Runs `attempt` (which sets its flag when the conversion ended before it was caught) until one
// catches it; fails naming `what` was never seen.
void until_caught(const std::function<void(bool&)>& attempt, const char* what) {
  for (int i = 0; i < kAttempts; ++i) {
    bool ended_first = false;
    attempt(ended_first);
    if (!ended_first) return;
  }
  FAIL() << "each of " << kAttempts << " conversions ended before its " << what << " was seen";
}

// A sharded safetensors folder, interrupted while its second shard is written: the old folder
// (with a file of the user's, README.md) is untouched; SIGINT removes the temp folder at once,
// after SIGKILL it stays until the next run, which replaces the folder, keeps README.md, drops
// the old shards and leaves no temp behind.
void interrupt_sharded_folder_once(int signal_number, bool& ended_first) {
  TempDir dir;
  const fs::path out = dir / "out", log = dir / "log";
  fs::create_directories(out);
  write_file_bytes(out / "config.json", {'o', 'l', 'd'});
  write_file_bytes(out / "model-00001-of-00099.safetensors", {'o', 'l', 'd', '1'});
  write_file_bytes(out / "model.safetensors.index.json", {'o', 'l', 'd', 'i'});
  write_file_bytes(out / "README.md", {'m', 'i', 'n', 'e'});
  const auto old_folder = snapshot(out);
  const pid_t pid = start_convert(preset_a_bf16_gguf(), out, log, 0, kShardBytes);
  if (!wait_for_temp(dir.path(), pid, ".model-00002-of-")) {
    wait_for(pid);
    ended_first = true;
    return;
  }
  ::kill(pid, signal_number);
  const int status = wait_for(pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << slurp(log);
  EXPECT_EQ(WTERMSIG(status), signal_number);
  EXPECT_EQ(snapshot(out), old_folder) << "the old folder changed";
  EXPECT_EQ(temp_files(out).size(), 0u);
  EXPECT_EQ(temp_files(dir.path()).size(), signal_number == SIGKILL ? 1u : 0u)
      << "SIGKILL leaves its temp folder until the next run; a handled signal removes it";

  const int again = wait_for(start_convert(preset_a_bf16_gguf(), out, log, 0, kShardBytes));
  ASSERT_TRUE(WIFEXITED(again) && WEXITSTATUS(again) == 0) << slurp(log);
  EXPECT_TRUE(temp_files(dir.path()).empty());
  EXPECT_TRUE(temp_files(out).empty());
  const auto now = snapshot(out);
  EXPECT_EQ(now.count("model-00001-of-00099.safetensors"), 0u) << "an old shard outlived the new folder";
  EXPECT_EQ(now.at("README.md"), old_folder.at("README.md"));
  EXPECT_NE(now.at("config.json"), old_folder.at("config.json"));
  ASSERT_TRUE(now.count("model.safetensors.index.json"));
  EXPECT_GE(std::count_if(now.begin(), now.end(), [](const auto& f) { return f.first.starts_with("model-0000"); }), 3);
}

void interrupt_sharded_folder_and_check(int signal_number) {
  TOKENIZER_OR_SKIP();
  until_caught([&](bool& ended_first) { interrupt_sharded_folder_once(signal_number, ended_first); }, "second shard");
}

TEST(InterruptedOutput, SigkillDuringShardedSafetensorsConversion) { interrupt_sharded_folder_and_check(SIGKILL); }
TEST(InterruptedOutput, SigintDuringShardedSafetensorsConversion) { interrupt_sharded_folder_and_check(SIGINT); }

// A split GGUF set, killed while its second file is written (the first one complete but not yet
// renamed): every file of the previous set is untouched; the next run replaces them all and
// sweeps the dead process's temp files.
void kill_split_gguf_once(bool& ended_first) {
  TempDir dir;
  const fs::path target = dir / "m.gguf", log = dir / "log";
  const auto input = preset_a_bf16_gguf();
  const int first = wait_for(start_convert(input, target, log, 0, kShardBytes));
  ASSERT_TRUE(WIFEXITED(first) && WEXITSTATUS(first) == 0) << slurp(log);
  auto old_set = snapshot(dir.path(), "m-0");
  ASSERT_GE(old_set.size(), 3u);
  for (auto& [name, bytes] : old_set) {
    bytes.assign(name.begin(), name.end());  // recognizable old bytes
    write_file_bytes(dir / name, bytes);
  }
  const pid_t pid = start_convert(input, target, log, 0, kShardBytes);
  if (!wait_for_temp(dir.path(), pid, ".m-00002-of-")) {
    wait_for(pid);
    ended_first = true;
    return;
  }
  ::kill(pid, SIGKILL);
  ASSERT_TRUE(WIFSIGNALED(wait_for(pid)));
  EXPECT_EQ(snapshot(dir.path(), "m-0"), old_set) << "a file of the old set changed";
  EXPECT_GE(temp_files(dir.path()).size(), 1u);

  const int again = wait_for(start_convert(input, target, log, 0, kShardBytes));
  ASSERT_TRUE(WIFEXITED(again) && WEXITSTATUS(again) == 0) << slurp(log);
  EXPECT_TRUE(temp_files(dir.path()).empty());
  const auto now = snapshot(dir.path(), "m-0");
  ASSERT_EQ(now.size(), old_set.size());
  for (const auto& [name, bytes] : now) EXPECT_NE(bytes, old_set.at(name)) << name << " is still the old file";
}

TEST(InterruptedOutput, SigkillDuringSplitGgufConversion) {
  TOKENIZER_OR_SKIP();
  until_caught(kill_split_gguf_once, "second file");
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
  const int status = wait_for(start_convert(preset_a_bf16_gguf(), output, log));
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

// Outputs made of several files appear only when complete: AtomicDirectory (a folder, staged
// beside the target and swapped into place) and commit_together (a set of files renamed only
// after every one is written). In-process checks of the mechanism; the interrupted conversions
// are in interrupted_output_test.cpp.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <memory>

#include "formats/core/atomic_file.h"
#include "formats/core/error.h"
#include "tests/test_support.h"

namespace gptoss::test {
namespace {
namespace fs = std::filesystem;

std::vector<uint8_t> bytes_of(const std::string& text) { return {text.begin(), text.end()}; }

size_t entries_in(const fs::path& dir) {
  return static_cast<size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

TEST(AtomicDirectory, NewFolderAppearsOnlyAtCommit) {
  TempDir dir;
  const fs::path target = dir / "out";
  {
    AtomicDirectory folder(target);
    write_file_bytes(folder.path() / "a", bytes_of("new"));
    EXPECT_FALSE(fs::exists(target));
    EXPECT_EQ(folder.path().parent_path(), dir.path());
    folder.commit();
  }
  EXPECT_EQ(read_file_bytes(target / "a"), bytes_of("new"));
  EXPECT_EQ(entries_in(dir.path()), 1u) << "the temp folder is gone";
}

TEST(AtomicDirectory, ReplacesTheOldFolderKeepingFilesTheOutputDoesNotClaim) {
  TempDir dir;
  const fs::path target = dir / "out";
  fs::create_directories(target);
  write_file_bytes(target / "model-00001-of-00009.safetensors", bytes_of("old shard"));
  write_file_bytes(target / "config.json", bytes_of("old config"));
  write_file_bytes(target / "notes.txt", bytes_of("the user's"));
  AtomicDirectory folder(target / "", [](const std::string& name) { return name.starts_with("model-"); });
  write_file_bytes(folder.path() / "config.json", bytes_of("new config"));
  write_file_bytes(folder.path() / "model-00001-of-00002.safetensors", bytes_of("new shard"));
  EXPECT_EQ(read_file_bytes(target / "config.json"), bytes_of("old config")) << "untouched until commit";
  folder.commit();
  EXPECT_EQ(read_file_bytes(target / "config.json"), bytes_of("new config"));
  EXPECT_EQ(read_file_bytes(target / "notes.txt"), bytes_of("the user's"));
  EXPECT_FALSE(fs::exists(target / "model-00001-of-00009.safetensors"));
  EXPECT_EQ(entries_in(target), 3u);
  EXPECT_EQ(entries_in(dir.path()), 1u);
}

TEST(AtomicDirectory, RefusesToDeleteASubfolderAndLeavesEverything) {
  TempDir dir;
  const fs::path target = dir / "out";
  fs::create_directories(target / "original");
  write_file_bytes(target / "config.json", bytes_of("old"));
  try {
    AtomicDirectory refused(target);
    FAIL() << "a folder holding a subfolder was accepted as a target";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("\"original\""), std::string::npos) << e.what();
  }
  // A subfolder that appears during the conversion is refused at commit.
  fs::remove(target / "original");
  AtomicDirectory folder(target);
  write_file_bytes(folder.path() / "config.json", bytes_of("new"));
  fs::create_directories(target / "appeared");
  EXPECT_THROW(folder.commit(), FormatError);
  EXPECT_EQ(read_file_bytes(target / "config.json"), bytes_of("old"));
  EXPECT_EQ(entries_in(dir.path()), 1u) << "the temp folder was removed";
}

TEST(AtomicDirectory, AbandonedFolderLeavesTheTargetAlone) {
  TempDir dir;
  const fs::path target = dir / "out";
  fs::create_directories(target);
  write_file_bytes(target / "config.json", bytes_of("old"));
  {
    AtomicDirectory folder(target);
    write_file_bytes(folder.path() / "config.json", bytes_of("new"));
  }  // destroyed without commit, as when an exception unwinds a conversion
  EXPECT_EQ(read_file_bytes(target / "config.json"), bytes_of("old"));
  EXPECT_EQ(entries_in(dir.path()), 1u);
}

TEST(AtomicDirectory, TargetThatIsAFileIsAnError) {
  TempDir dir;
  write_file_bytes(dir / "out", bytes_of("file"));
  EXPECT_THROW(AtomicDirectory(dir / "out"), FormatError);
}

TEST(AtomicDirectory, SweepRemovesTempFoldersOfDeadProcessesOnly) {
  TempDir dir;
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ::waitpid(dead, nullptr, 0);
  const fs::path dead_folder = dir / (".out.tmp-" + std::to_string(dead) + "-0123abcd");
  const fs::path live_folder = dir / (".out.tmp-" + std::to_string(::getppid()) + "-01234567");
  for (const auto& f : {dead_folder, live_folder}) {
    fs::create_directories(f);
    write_file_bytes(f / "model-00001-of-00002.safetensors", bytes_of("partial"));
  }
  AtomicDirectory folder(dir / "out");
  EXPECT_FALSE(fs::exists(dead_folder));
  EXPECT_TRUE(fs::exists(live_folder / "model-00001-of-00002.safetensors"));
  EXPECT_TRUE(fs::is_directory(folder.path()));
}

TEST(AtomicDirectory, SignalHandlerRemovesTheTempFolderAndItsFiles) {
  TempDir dir;
  const pid_t pid = ::fork();
  if (pid == 0) {
    remove_temp_files_on_signals();
    AtomicDirectory folder(dir / "out");
    write_file_bytes(folder.path() / "config.json", bytes_of("done"));
    AtomicFileWriter shard(folder.path() / "model-00001-of-00002.safetensors");
    shard.write_zeros(100);
    ::raise(SIGTERM);
    ::_exit(0);  // not reached
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(CommitTogether, NoFileOfTheSetAppearsBeforeAllAreWritten) {
  TempDir dir;
  write_file_bytes(dir / "s-1", bytes_of("old 1"));
  write_file_bytes(dir / "s-2", bytes_of("old 2"));
  std::vector<std::unique_ptr<AtomicFileWriter>> set;
  for (const char* name : {"s-1", "s-2"}) {
    set.push_back(std::make_unique<AtomicFileWriter>(dir / name));
    set.back()->write(name, 3);
    set.back()->finish();  // complete, fsync'd, closed: still a temp file
  }
  EXPECT_EQ(read_file_bytes(dir / "s-1"), bytes_of("old 1"));
  EXPECT_EQ(entries_in(dir.path()), 4u);
  commit_together(set);
  EXPECT_EQ(read_file_bytes(dir / "s-1"), bytes_of("s-1"));
  EXPECT_EQ(read_file_bytes(dir / "s-2"), bytes_of("s-2"));
  EXPECT_EQ(entries_in(dir.path()), 2u);
}

TEST(CommitTogether, AFinishedButUncommittedFileIsRemovedWithItsWriter) {
  TempDir dir;
  {
    AtomicFileWriter w(dir / "s-1");
    w.write_u32(1);
    w.finish();
  }
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

}  // namespace
}  // namespace gptoss::test

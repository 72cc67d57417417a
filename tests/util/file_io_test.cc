// sim/util/file_io: inputs are regular files or stdin under a size limit; outputs are written
// atomically, checked, and all or nothing for a set of files.
#include "sim/util/file_io.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace perfsim {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// A fresh directory under the test's temporary directory, removed at the end.
class FileIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("file_io_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  static std::string Contents(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    std::ostringstream s;
    s << file.rdbuf();
    return s.str();
  }
  static void Write(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
  }
  int FilesIn() const {
    int n = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir_)) ++n;
    return n;
  }

  std::filesystem::path dir_;
};

TEST_F(FileIoTest, ReadsARegularFileWhole) {
  Write(Path("a.txt"), std::string("line\0with nul\n", 14));
  absl::StatusOr<std::string> text = ReadRegularFile(Path("a.txt"));
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, std::string("line\0with nul\n", 14));
}

TEST_F(FileIoTest, RefusesADirectoryByName) {
  absl::StatusOr<std::string> text = ReadRegularFile(dir_.string());
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(text.status().message(),
            dir_.string() + ": expected a regular file or '-'; got a directory");
}

TEST_F(FileIoTest, RefusesACharacterDeviceWithoutReadingIt) {
  // /dev/zero never ends; it used to be read until memory ran out.
  absl::StatusOr<std::string> text = ReadRegularFile("/dev/zero");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().message(),
            "/dev/zero: expected a regular file or '-'; got a character device");
}

TEST_F(FileIoTest, RefusesAFifoWithoutWaitingForAWriter) {
  ASSERT_EQ(::mkfifo(Path("fifo").c_str(), 0600), 0);
  absl::StatusOr<std::string> text = ReadRegularFile(Path("fifo"));
  ASSERT_FALSE(text.ok());
  EXPECT_THAT(std::string(text.status().message()), HasSubstr("got a FIFO"));
}

TEST_F(FileIoTest, RefusesAFileOverTheLimitBeforeReadingIt) {
  Write(Path("big"), std::string(100, 'x'));
  absl::StatusOr<std::string> text = ReadRegularFile(Path("big"), 99);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(text.status().message(), Path("big") + ": expected at most 99 bytes; got 100");
  EXPECT_TRUE(ReadRegularFile(Path("big"), 100).ok());
}

TEST_F(FileIoTest, MissingFileIsNotFound) {
  absl::StatusOr<std::string> text = ReadRegularFile(Path("missing"));
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(text.status().message()), StartsWith(Path("missing") + ": cannot open file"));
}

TEST_F(FileIoTest, StandardInputIsHeldToTheLimit) {
  std::istringstream in(std::string(3 << 20, 'y'));
  absl::StatusOr<std::string> text = ReadInputFile("-", in, 2 << 20);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().message(), "<stdin>: expected at most 2097152 bytes (2 MiB); got more");
  std::istringstream small("hello");
  EXPECT_EQ(*ReadInputFile("-", small, 5), "hello");
}

TEST_F(FileIoTest, InputLimitTextUsesTheLargestExactUnit) {
  EXPECT_EQ(InputLimitText(int64_t{1} << 30), "1 GiB");
  EXPECT_EQ(InputLimitText(int64_t{64} << 20), "64 MiB");
  EXPECT_EQ(InputLimitText(1000), "1000 bytes");
}

TEST_F(FileIoTest, AtomicWriteReplacesAndLeavesNoTemporary) {
  Write(Path("out.txt"), "old");
  ASSERT_TRUE(WriteFileAtomically(Path("out.txt"), "new contents").ok());
  EXPECT_EQ(Contents(Path("out.txt")), "new contents");
  EXPECT_EQ(FilesIn(), 1);
}

TEST_F(FileIoTest, AtomicWriteKeepsTheModeOfTheFileItReplaces) {
  Write(Path("script.sh"), "old");
  ASSERT_EQ(::chmod(Path("script.sh").c_str(), 0750), 0);
  ASSERT_TRUE(WriteFileAtomically(Path("script.sh"), "new").ok());
  struct stat info;
  ASSERT_EQ(::stat(Path("script.sh").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0750u);
}

TEST_F(FileIoTest, WriteToAFullDeviceIsRefusedByName) {
  // /dev/full is not a regular file: it is refused before anything is written (a rename over
  // it would replace the device node).
  absl::Status s = WriteFileAtomically("/dev/full", "x");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "/dev/full: expected a regular file to write; got a character device");
}

TEST_F(FileIoTest, WriteIntoAMissingDirectoryNamesThePath) {
  absl::Status s = WriteFileAtomically(Path("no/such/dir/out.txt"), "x");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), StartsWith(Path("no/such/dir/out.txt") + ": cannot write: "));
}

TEST_F(FileIoTest, FileSetWritesNothingWhenOneFileFails) {
  Write(Path("a"), "old a");
  Write(Path("b"), "old b");
  {
    AtomicFileSet files;
    ASSERT_TRUE(files.Stage(Path("a"), "new a").ok());
    ASSERT_TRUE(files.Stage(Path("b"), "new b").ok());
    // The third target is a directory: the set fails and is never committed.
    std::filesystem::create_directories(Path("c"));
    EXPECT_FALSE(files.Stage(Path("c"), "new c").ok());
  }
  EXPECT_EQ(Contents(Path("a")), "old a");
  EXPECT_EQ(Contents(Path("b")), "old b");
  EXPECT_EQ(FilesIn(), 3);  // a, b and the directory c: no temporaries left behind
}

TEST_F(FileIoTest, FileSetReplacesEveryFileOnCommit) {
  Write(Path("a"), "old a");
  AtomicFileSet files;
  ASSERT_TRUE(files.Stage(Path("a"), "new a").ok());
  ASSERT_TRUE(files.Stage(Path("b"), "new b").ok());
  EXPECT_EQ(Contents(Path("a")), "old a");  // nothing lands before Commit
  ASSERT_TRUE(files.Commit().ok());
  EXPECT_EQ(Contents(Path("a")), "new a");
  EXPECT_EQ(Contents(Path("b")), "new b");
  EXPECT_EQ(FilesIn(), 2);
}

}  // namespace
}  // namespace perfsim

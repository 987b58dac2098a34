#include "common/file_system.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/testing/temp_dir.h"

namespace trainwatch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class PosixFileSystemTest : public ::testing::Test {
 protected:
  FileSystem& fs_ = PosixFileSystem();
  test::TempDir dir_;
};

TEST_F(PosixFileSystemTest, AppendSyncReadBack) {
  const std::string path = dir_.Join("a.log");
  {
    auto file = fs_.OpenAppendable(path);
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    EXPECT_EQ((*file)->Size(), 0u);
    ASSERT_TRUE((*file)->Append("hello ").ok());
    ASSERT_TRUE((*file)->Append("world").ok());
    EXPECT_EQ((*file)->Size(), 11u);
    ASSERT_TRUE((*file)->Sync().ok());
    ASSERT_TRUE((*file)->Close().ok());
  }
  auto contents = fs_.ReadFile(path);
  ASSERT_TRUE(contents.ok());
  EXPECT_EQ(*contents, "hello world");
  auto size = fs_.FileSize(path);
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(*size, 11u);
}

TEST_F(PosixFileSystemTest, ReopenKeepsContentAndAppends) {
  const std::string path = dir_.Join("a.log");
  {
    auto file = fs_.OpenAppendable(path);
    ASSERT_TRUE(file.ok());
    ASSERT_TRUE((*file)->Append("one").ok());
  }  // destructor closes
  auto file = fs_.OpenAppendable(path);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ((*file)->Size(), 3u);
  ASSERT_TRUE((*file)->Append("two").ok());
  EXPECT_EQ((*file)->Size(), 6u);
  EXPECT_EQ(*fs_.ReadFile(path), "onetwo");
}

TEST_F(PosixFileSystemTest, LargeReadAndWrite) {
  const std::string path = dir_.Join("big");
  std::string data(3 << 20, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 131);
  auto file = fs_.OpenAppendable(path);
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Append(data).ok());
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_EQ(*fs_.ReadFile(path), data);
}

TEST_F(PosixFileSystemTest, ClosedFileRefusesWrites) {
  auto file = fs_.OpenAppendable(dir_.Join("x"));
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_TRUE((*file)->Close().ok());  // idempotent
  EXPECT_EQ((*file)->Append("late").code(), StatusCode::kIoError);
  EXPECT_EQ((*file)->Sync().code(), StatusCode::kIoError);
}

TEST_F(PosixFileSystemTest, ListDirIsSortedNamesOnly) {
  for (const char* name : {"b", "c", "a"}) {
    ASSERT_TRUE(WriteFileAtomic(fs_, dir_.Join(name), name).ok());
  }
  ASSERT_TRUE(fs_.CreateDirs(dir_.Join("sub")).ok());
  auto names = fs_.ListDir(dir_.path());
  ASSERT_TRUE(names.ok());
  EXPECT_THAT(*names, ElementsAre("a", "b", "c", "sub"));
}

TEST_F(PosixFileSystemTest, CreateDirsIsRecursiveAndIdempotent) {
  const std::string deep = dir_.Join("x/y/z");
  ASSERT_TRUE(fs_.CreateDirs(deep).ok());
  EXPECT_TRUE(fs_.Exists(deep));
  EXPECT_TRUE(fs_.CreateDirs(deep).ok());
  EXPECT_TRUE(fs_.CreateDirs(deep + "/").ok());
  ASSERT_TRUE(WriteFileAtomic(fs_, dir_.Join("file"), "x").ok());
  EXPECT_EQ(fs_.CreateDirs(dir_.Join("file")).code(), StatusCode::kAlreadyExists);
}

TEST_F(PosixFileSystemTest, RemoveRenameTruncate) {
  const std::string a = dir_.Join("a");
  const std::string b = dir_.Join("b");
  ASSERT_TRUE(WriteFileAtomic(fs_, a, "0123456789").ok());
  ASSERT_TRUE(fs_.Truncate(a, 4).ok());
  EXPECT_EQ(*fs_.ReadFile(a), "0123");
  ASSERT_TRUE(fs_.RenameFile(a, b).ok());
  EXPECT_FALSE(fs_.Exists(a));
  EXPECT_EQ(*fs_.ReadFile(b), "0123");
  ASSERT_TRUE(fs_.RemoveFile(b).ok());
  EXPECT_FALSE(fs_.Exists(b));
  ASSERT_TRUE(fs_.SyncDir(dir_.path()).ok());
}

TEST_F(PosixFileSystemTest, ErrorsNameThePath) {
  const std::string missing = dir_.Join("missing");
  Status s = fs_.ReadFile(missing).status();
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr(missing));
  EXPECT_EQ(fs_.FileSize(missing).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(fs_.RemoveFile(missing).code(), StatusCode::kNotFound);
  EXPECT_EQ(fs_.Truncate(missing, 0).code(), StatusCode::kNotFound);
  EXPECT_EQ(fs_.ListDir(missing).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(fs_.SyncDir(missing).code(), StatusCode::kNotFound);
  Status rename = fs_.RenameFile(missing, dir_.Join("other"));
  EXPECT_EQ(rename.code(), StatusCode::kNotFound);
  EXPECT_THAT(rename.message(), HasSubstr(missing));

  // A directory where a file is expected: an IoError with the OS's reason.
  Status open = fs_.OpenAppendable(dir_.path()).status();
  EXPECT_EQ(open.code(), StatusCode::kIoError);
  EXPECT_THAT(open.message(), HasSubstr(dir_.path()));
  EXPECT_THAT(open.message(), HasSubstr("Is a directory"));
  EXPECT_EQ(fs_.OpenAppendable(dir_.Join("no/such/dir/file")).status().code(),
            StatusCode::kNotFound);
}

TEST_F(PosixFileSystemTest, WriteFileAtomicReplacesAndLeavesNoTemp) {
  const std::string path = dir_.Join("state.json");
  ASSERT_TRUE(WriteFileAtomic(fs_, path, "first, and longer").ok());
  ASSERT_TRUE(WriteFileAtomic(fs_, path, "second").ok());
  EXPECT_EQ(*fs_.ReadFile(path), "second");
  EXPECT_FALSE(fs_.Exists(path + ".tmp"));
  EXPECT_THAT(*fs_.ListDir(dir_.path()), ElementsAre("state.json"));
}

TEST_F(PosixFileSystemTest, WriteFileAtomicIgnoresLeftoverTemp) {
  const std::string path = dir_.Join("state");
  ASSERT_TRUE(WriteFileAtomic(fs_, path + ".tmp", "stale junk from a crash").ok());
  ASSERT_TRUE(WriteFileAtomic(fs_, path, "fresh").ok());
  EXPECT_EQ(*fs_.ReadFile(path), "fresh");
}

TEST_F(PosixFileSystemTest, WriteFileAtomicInMissingDirFails) {
  Status s = WriteFileAtomic(fs_, dir_.Join("nope/state"), "x");
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("nope/state"));
}

}  // namespace
}  // namespace trainwatch

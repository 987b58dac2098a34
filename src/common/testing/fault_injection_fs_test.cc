#include "common/testing/fault_injection_fs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "common/testing/temp_dir.h"

namespace trainwatch::test {
namespace {

using ::testing::ElementsAre;

class FaultInjectionFileSystemTest : public ::testing::Test {
 protected:
  std::unique_ptr<WritableFile> Open(const std::string& name) {
    auto file = fs_.OpenAppendable(dir_.Join(name));
    EXPECT_TRUE(file.ok()) << file.status().ToString();
    return file.ok() ? std::move(file).value() : nullptr;
  }
  std::string Read(const std::string& name) {
    auto contents = PosixFileSystem().ReadFile(dir_.Join(name));
    return contents.ok() ? *contents : "<" + contents.status().ToString() + ">";
  }

  TempDir dir_;
  FaultInjectionFileSystem fs_{PosixFileSystem()};
};

TEST_F(FaultInjectionFileSystemTest, CrashKeepsOnlySyncedBytes) {
  auto file = Open("f");
  ASSERT_TRUE(fs_.SyncDir(dir_.path()).ok());
  ASSERT_TRUE(file->Append("durable").ok());
  ASSERT_TRUE(file->Sync().ok());
  ASSERT_TRUE(file->Append(" lost").ok());
  EXPECT_EQ(fs_.SyncedBytes(dir_.Join("f")), 7);
  EXPECT_EQ(Read("f"), "durable lost");  // visible before the crash, as in the page cache

  ASSERT_TRUE(fs_.Crash().ok());
  EXPECT_EQ(Read("f"), "durable");
  EXPECT_EQ(fs_.SyncedBytes(dir_.Join("f")), -1);
}

TEST_F(FaultInjectionFileSystemTest, CrashForgetsFilesWhoseDirectoryWasNotSynced) {
  auto kept = Open("kept");
  ASSERT_TRUE(kept->Append("k").ok());
  ASSERT_TRUE(kept->Sync().ok());
  ASSERT_TRUE(fs_.SyncDir(dir_.path() + "/").ok());  // trailing slash: same directory
  auto lost = Open("lost");
  ASSERT_TRUE(lost->Append("synced, but the directory entry was not").ok());
  ASSERT_TRUE(lost->Sync().ok());

  ASSERT_TRUE(fs_.Crash().ok());
  fs_.Restart();
  EXPECT_EQ(Read("kept"), "k");
  EXPECT_FALSE(fs_.Exists(dir_.Join("lost")));
}

TEST_F(FaultInjectionFileSystemTest, PreexistingFilesCountAsDurable) {
  ASSERT_TRUE(WriteFileAtomic(PosixFileSystem(), dir_.Join("old"), "old").ok());
  auto file = Open("old");
  ASSERT_TRUE(file->Append(" new").ok());
  ASSERT_TRUE(fs_.Crash().ok());
  EXPECT_EQ(Read("old"), "old");
}

TEST_F(FaultInjectionFileSystemTest, DownUntilRestartAndOldFilesStayDead) {
  auto file = Open("f");
  ASSERT_TRUE(fs_.SyncDir(dir_.path()).ok());
  ASSERT_TRUE(fs_.Crash().ok());
  EXPECT_EQ(file->Append("x").code(), StatusCode::kIoError);
  EXPECT_EQ(file->Sync().code(), StatusCode::kIoError);
  EXPECT_EQ(fs_.ReadFile(dir_.Join("f")).status().code(), StatusCode::kIoError);
  EXPECT_EQ(fs_.OpenAppendable(dir_.Join("g")).status().code(), StatusCode::kIoError);
  EXPECT_EQ(fs_.ListDir(dir_.path()).status().code(), StatusCode::kIoError);
  EXPECT_FALSE(fs_.Exists(dir_.Join("f")));

  fs_.Restart();
  EXPECT_EQ(file->Append("x").code(), StatusCode::kIoError);  // the old process's file
  EXPECT_EQ(file->Close().code(), StatusCode::kIoError);
  EXPECT_TRUE(fs_.Exists(dir_.Join("f")));
  auto reopened = Open("f");
  EXPECT_TRUE(reopened->Append("y").ok());
  EXPECT_THAT(*fs_.ListDir(dir_.path()), ElementsAre("f"));
}

TEST_F(FaultInjectionFileSystemTest, TruncateLowersSyncedLength) {
  auto file = Open("f");
  ASSERT_TRUE(fs_.SyncDir(dir_.path()).ok());
  ASSERT_TRUE(file->Append("0123456789").ok());
  ASSERT_TRUE(file->Sync().ok());
  ASSERT_TRUE(fs_.Truncate(dir_.Join("f"), 4).ok());
  EXPECT_EQ(fs_.SyncedBytes(dir_.Join("f")), 4);
  ASSERT_TRUE(fs_.Crash().ok());
  EXPECT_EQ(Read("f"), "0123");
}

TEST_F(FaultInjectionFileSystemTest, RenameCarriesState) {
  auto file = Open("a.tmp");
  ASSERT_TRUE(file->Append("payload").ok());
  ASSERT_TRUE(file->Sync().ok());
  ASSERT_TRUE(file->Close().ok());
  ASSERT_TRUE(fs_.RenameFile(dir_.Join("a.tmp"), dir_.Join("a")).ok());
  EXPECT_EQ(fs_.SyncedBytes(dir_.Join("a")), 7);
  EXPECT_EQ(fs_.SyncedBytes(dir_.Join("a.tmp")), -1);
  ASSERT_TRUE(fs_.SyncDir(dir_.path()).ok());
  ASSERT_TRUE(fs_.Crash().ok());
  EXPECT_EQ(Read("a"), "payload");
}

TEST_F(FaultInjectionFileSystemTest, WriteFileAtomicSurvivesCrash) {
  ASSERT_TRUE(WriteFileAtomic(fs_, dir_.Join("state"), "v1").ok());
  ASSERT_TRUE(fs_.Crash().ok());
  fs_.Restart();
  EXPECT_EQ(Read("state"), "v1");
}

TEST_F(FaultInjectionFileSystemTest, TornWritesKeepAPrefixOfTheUnsyncedBytes) {
  std::set<std::string> outcomes;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    TempDir dir;
    FaultInjectionFileSystem fs(PosixFileSystem());
    auto durable = fs.OpenAppendable(dir.Join("durable"));
    ASSERT_TRUE(fs.SyncDir(dir.path()).ok());
    ASSERT_TRUE((*durable)->Append("abc").ok());
    ASSERT_TRUE((*durable)->Sync().ok());
    ASSERT_TRUE((*durable)->Append("defghij").ok());
    auto created = fs.OpenAppendable(dir.Join("created"));  // directory never synced again
    ASSERT_TRUE((*created)->Append("xyz").ok());
    ASSERT_TRUE((*created)->Sync().ok());

    ASSERT_TRUE(fs.CrashWithTornWrites(seed).ok());
    std::string contents = *PosixFileSystem().ReadFile(dir.Join("durable"));
    ASSERT_GE(contents.size(), 3u);
    EXPECT_EQ(contents, std::string("abcdefghij").substr(0, contents.size()));
    const bool created_survived = PosixFileSystem().Exists(dir.Join("created"));
    outcomes.insert(std::to_string(contents.size()) + (created_survived ? "+" : "-"));
  }
  EXPECT_GT(outcomes.size(), 4u);  // the seed matters
}

TEST_F(FaultInjectionFileSystemTest, InjectedWriteErrors) {
  auto file = Open("f");
  fs_.SetWriteError(Status::IoError("injected EIO"));
  EXPECT_EQ(file->Append("x").message(), "injected EIO");
  EXPECT_EQ(file->Sync().message(), "injected EIO");
  fs_.SetWriteError(Status::Ok());
  EXPECT_TRUE(file->Append("x").ok());
  EXPECT_TRUE(file->Sync().ok());

  fs_.SetSyncDirError(Status::IoError("injected dir EIO"));
  EXPECT_EQ(fs_.SyncDir(dir_.path()).message(), "injected dir EIO");
  ASSERT_TRUE(fs_.Crash().ok());
  EXPECT_FALSE(PosixFileSystem().Exists(dir_.Join("f")));  // its creation never became durable
}

}  // namespace
}  // namespace trainwatch::test

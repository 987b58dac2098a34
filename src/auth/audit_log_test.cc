#include "auth/audit_log.h"

#include <future>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/testing/temp_dir.h"

namespace trainwatch::auth {
namespace {

class AuditLogTest : public ::testing::Test {
 protected:
  std::unique_ptr<AuditLog> Open(double retention = 90 * 86400.0) {
    auto log = AuditLog::Open(PosixFileSystem(), dir_.Join("audit"), clock_, logger_, retention);
    EXPECT_TRUE(log.ok()) << log.status().ToString();
    return std::move(*log);
  }
  AuditEntry Entry(std::string key, std::string action, int outcome) {
    return AuditEntry{clock_.NowUnixSeconds(), std::move(key), "10.0.0.7", std::move(action), "project=p", outcome, ""};
  }

  test::TempDir dir_;
  ManualClock clock_;
  Logger logger_{LogLevel::kError};
};

TEST_F(AuditLogTest, AnEntryIsDurableWhenItsCallbackRuns) {
  auto log = Open();
  std::promise<void> durable;
  log->Append(Entry("ci", "POST /api/v1/write", 200), [&] { durable.set_value(); });
  durable.get_future().wait();
  // Read by another instance, as after a crash: it is on disk.
  auto entries = Open()->Read({});
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), 1u);
  EXPECT_EQ((*entries)[0].key, "ci");
  EXPECT_EQ((*entries)[0].remote, "10.0.0.7");
  EXPECT_EQ((*entries)[0].outcome, 200);
}

TEST_F(AuditLogTest, ReadsNewestFirstWithFiltersAndPaging) {
  auto log = Open();
  ASSERT_TRUE(log->AppendNow(Entry("ana", "POST /api/v1/silences", 200)).ok());
  clock_.Advance(86400);  // the next day's file
  ASSERT_TRUE(log->AppendNow(Entry("", "GET /api/v1/runs", 401)).ok());
  ASSERT_TRUE(log->AppendNow(Entry("ci", "POST /api/v1/write", 200)).ok());
  auto all = log->Read({});
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].key, "ci");
  EXPECT_EQ((*all)[2].key, "ana");
  EXPECT_EQ(log->Read({.failures_only = true})->size(), 1u);
  EXPECT_EQ(log->Read({.key = "ana"})->at(0).action, "POST /api/v1/silences");
  EXPECT_EQ(log->Read({.action = "POST"})->size(), 2u);
  auto page = log->Read({.limit = 1, .offset = 1});
  ASSERT_EQ(page->size(), 1u);
  EXPECT_EQ((*page)[0].outcome, 401);
}

TEST_F(AuditLogTest, RetentionDeletesOldDays) {
  auto log = Open(/*retention=*/2 * 86400.0);
  ASSERT_TRUE(log->AppendNow(Entry("old", "POST /x", 200)).ok());
  clock_.Advance(5 * 86400);
  ASSERT_TRUE(log->AppendNow(Entry("new", "POST /x", 200)).ok());
  ASSERT_TRUE(log->ApplyRetention().ok());
  auto entries = log->Read({});
  ASSERT_EQ(entries->size(), 1u);
  EXPECT_EQ((*entries)[0].key, "new");
}

TEST_F(AuditLogTest, ATornLastLineIsSkipped) {
  auto log = Open();
  ASSERT_TRUE(log->AppendNow(Entry("ci", "POST /x", 200)).ok());
  auto names = PosixFileSystem().ListDir(dir_.Join("audit"));
  auto file = PosixFileSystem().OpenAppendable(dir_.Join("audit") + "/" + names->at(0));
  ASSERT_TRUE((*file)->Append("{\"time\": 1, \"ke").ok());
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_EQ(log->Read({})->size(), 1u);
  log.reset();  // a restart cuts the torn line: the next entry is whole
  auto reopened = Open();
  ASSERT_TRUE(reopened->AppendNow(Entry("after", "POST /x", 200)).ok());
  auto entries = reopened->Read({});
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[0].key, "after");
}

}  // namespace
}  // namespace trainwatch::auth

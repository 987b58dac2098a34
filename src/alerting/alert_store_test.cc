#include "alerting/alert_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/testing/fault_injection_fs.h"
#include "common/testing/temp_dir.h"

namespace trainwatch::alerting {
namespace {

AlertRecord MakeAlert(const std::string& run, const std::string& kind) {
  AlertRecord a;
  a.project = "p";
  a.run = run;
  a.kind = kind;
  a.name = kind;
  a.metric = "loss";
  a.severity = "critical";
  a.message = "non-finite value of loss";
  a.step = 120;
  a.time = 1.7e9 + 0.25;
  a.value = NAN;
  a.labels = {{"team", "vision"}};
  a.started_at = a.fired_at = a.updated_at = 1.8e9;
  return a;
}

TEST(AlertStoreTest, EveryAcknowledgedChangeSurvivesAPowerCut) {
  test::TempDir dir;
  test::FaultInjectionFileSystem fs(PosixFileSystem());
  {
    auto store = AlertStore::Open(fs, dir.Join("alerts"));
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    AlertRecord a = MakeAlert("r1", "nan");
    ASSERT_TRUE((*store)->Put(&a).ok());
    EXPECT_EQ(a.id, 1u);
    AlertRecord b = MakeAlert("r2", "stalled");
    ASSERT_TRUE((*store)->Put(&b).ok());
    a.status = AlertStatus::kResolved;
    a.resolved_at = 1.8e9 + 60;
    ASSERT_TRUE((*store)->Put(&a).ok());
    Silence s;
    s.project = "p";
    s.kind = "stalled";
    s.ends_at = 2e9;
    ASSERT_TRUE((*store)->Put(&s).ok());
    EXPECT_EQ(s.id, 1u);
  }
  ASSERT_TRUE(fs.Crash().ok());
  fs.Restart();
  auto store = AlertStore::Open(fs, dir.Join("alerts"));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ASSERT_EQ((*store)->alerts().size(), 2u);
  const AlertRecord& a = (*store)->alerts().at(1);
  EXPECT_EQ(a.status, AlertStatus::kResolved);
  EXPECT_EQ(a.resolved_at, 1.8e9 + 60);
  EXPECT_EQ(a.time, 1.7e9 + 0.25);
  EXPECT_TRUE(std::isnan(a.value));
  EXPECT_EQ(a.labels.at("team"), "vision");
  EXPECT_EQ((*store)->alerts().at(2).kind, "stalled");
  ASSERT_EQ((*store)->silences().size(), 1u);
  EXPECT_EQ((*store)->silences().at(1).kind, "stalled");
  // Ids continue after the highest one on disk.
  AlertRecord c = MakeAlert("r3", "nan");
  ASSERT_TRUE((*store)->Put(&c).ok());
  EXPECT_EQ(c.id, 3u);
}

TEST(AlertStoreTest, TornTailIsDroppedAndTheRestKept) {
  test::TempDir dir;
  FileSystem& fs = PosixFileSystem();
  {
    auto store = AlertStore::Open(fs, dir.Join("alerts"));
    ASSERT_TRUE(store.ok());
    for (int i = 0; i < 3; ++i) {
      AlertRecord a = MakeAlert("r" + std::to_string(i), "nan");
      ASSERT_TRUE((*store)->Put(&a).ok());
    }
  }
  const std::string path = dir.Join("alerts/alerts.log");
  auto size = fs.FileSize(path);
  ASSERT_TRUE(size.ok());
  ASSERT_TRUE(fs.Truncate(path, *size - 7).ok());  // the last record is torn
  auto store = AlertStore::Open(fs, dir.Join("alerts"));
  ASSERT_TRUE(store.ok());
  EXPECT_EQ((*store)->alerts().size(), 2u);
  EXPECT_GT((*store)->dropped_tail_bytes(), 0u);
  AlertRecord d = MakeAlert("r9", "nan");
  ASSERT_TRUE((*store)->Put(&d).ok());
  EXPECT_EQ(d.id, 3u);
}

TEST(AlertStoreTest, SupersededVersionsAreCompactedOnOpen) {
  test::TempDir dir;
  FileSystem& fs = PosixFileSystem();
  {
    auto store = AlertStore::Open(fs, dir.Join("alerts"));
    ASSERT_TRUE(store.ok());
    AlertRecord a = MakeAlert("r1", "nan");
    for (int i = 0; i < 200; ++i) {
      a.occurrences = static_cast<uint64_t>(i + 1);
      ASSERT_TRUE((*store)->Put(&a).ok());
    }
  }
  auto before = fs.FileSize(dir.Join("alerts/alerts.log"));
  auto store = AlertStore::Open(fs, dir.Join("alerts"));
  ASSERT_TRUE(store.ok());
  auto after = fs.FileSize(dir.Join("alerts/alerts.log"));
  EXPECT_LT(*after * 50, *before);
  EXPECT_EQ((*store)->alerts().at(1).occurrences, 200u);
}

}  // namespace
}  // namespace trainwatch::alerting

namespace trainwatch::alerting {
namespace {

// A full disk (ENOSPC) or EIO under the alert store: the change is refused with the disk's error,
// what was stored stays intact, and the same change is stored once the disk takes writes again.
TEST(AlertStoreTest, DiskErrorRefusesTheChangeAndStoringResumesAfterIt) {
  using Failed = test::FaultInjectionFileSystem::FailedAppend;
  for (auto [injected, failed] :
       {std::pair{Status::ResourceExhausted("injected ENOSPC"), Failed::kHalfWritten},
        std::pair{Status::IoError("injected EIO"), Failed::kNothingWritten}}) {
    SCOPED_TRACE(injected.ToString());
    test::TempDir dir;
    test::FaultInjectionFileSystem fs(PosixFileSystem());
    {
      auto store = AlertStore::Open(fs, dir.Join("alerts"));
      ASSERT_TRUE(store.ok()) << store.status().ToString();
      AlertRecord a = MakeAlert("r1", "nan");
      ASSERT_TRUE((*store)->Put(&a).ok());
      fs.SetWriteError(injected, failed);
      AlertRecord b = MakeAlert("r2", "stalled");
      Status refused = (*store)->Put(&b);
      EXPECT_EQ(refused.code(), injected.code()) << refused.ToString();
      fs.SetWriteError(Status::Ok());
      Status stored = (*store)->Put(&b);
      ASSERT_TRUE(stored.ok()) << stored.ToString();
    }
    auto store = AlertStore::Open(PosixFileSystem(), dir.Join("alerts"));
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    EXPECT_EQ((*store)->dropped_tail_bytes(), 0u);
    std::vector<std::string> runs;
    for (const auto& [id, alert] : (*store)->alerts()) runs.push_back(alert.run);
    EXPECT_EQ(runs, (std::vector<std::string>{"r1", "r2"}));
  }
}

}  // namespace
}  // namespace trainwatch::alerting

// Crash tests: appenders run while the "power" is cut by FaultInjectionFileSystem::Crash(), which
// keeps only what was synced. Every record whose callback said OK must survive.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <map>
#include <random>
#include <thread>

#include "common/testing/fault_injection_fs.h"
#include "common/testing/temp_dir.h"
#include "storage/wal/wal_log.h"
#include "storage/wal/wal_test_util.h"

namespace trainwatch::storage::wal {
namespace {

// Checkpoints during the lifetimes: a thread truncates the log before the first record not yet
// acknowledged, retiring the last segment whenever nothing newer is on disk.
struct Truncation {
  uint64_t below = 1;          // records below this may be gone: the highest truncation asked for
  uint64_t highest_acked = 0;  // LSNs are never reused, truncated or not
};

// One process lifetime: open, replay and check, append from several threads, crash at a random
// moment (odd lifetimes with torn writes). `acknowledged` carries the records acknowledged in all
// earlier lifetimes; `torn_tail_bytes` adds up what recovery cut. With `truncation`, a checkpointer
// thread truncates as the appends go on.
void RunLifetime(test::FaultInjectionFileSystem& fs, const std::string& dir, int lifetime,
                 std::map<uint64_t, std::string>& acknowledged, uint64_t& torn_tail_bytes,
                 Truncation* truncation = nullptr) {
  SCOPED_TRACE("lifetime " + std::to_string(lifetime));
  WalOptions options;
  options.segment_bytes = 2048;    // frequent rolls: new files and directory syncs mid-stream
  options.max_queue_bytes = 4096;  // appenders outrun the disk: keep groups small
  auto opened = WalLog::Open(fs, dir, options);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::unique_ptr<WalLog> log = std::move(opened).value();

  const uint64_t from = truncation ? truncation->below : 1;
  Replayed replayed = ReplayAll(*log, from);
  EXPECT_EQ(replayed.stats.corrupt_records, 0u) << replayed.stats.report;
  EXPECT_EQ(replayed.stats.lsn_gaps, 0u) << replayed.stats.report;
  std::map<uint64_t, std::string> on_disk(replayed.records.begin(), replayed.records.end());
  if (truncation) {
    EXPECT_GT(log->NextLsn(), truncation->highest_acked) << "an LSN would be reused";
    std::erase_if(acknowledged, [&](const auto& entry) { return entry.first < from; });
  }
  for (const auto& [lsn, payload] : acknowledged) {
    auto it = on_disk.find(lsn);
    ASSERT_NE(it, on_disk.end()) << "acknowledged lsn " << lsn << " lost";
    ASSERT_EQ(it->second, payload) << "lsn " << lsn;
  }
  // Records that survived without an acknowledgement are durable now: later lifetimes must keep
  // them too, since their LSNs are not reused.
  acknowledged = on_disk;
  torn_tail_bytes += replayed.stats.torn_tail_bytes;
  const uint64_t first_new = log->NextLsn();
  if (!on_disk.empty()) {
    EXPECT_EQ(first_new, on_disk.rbegin()->first + 1);
  }

  std::mt19937 rng(static_cast<unsigned>(lifetime));
  const int crash_after = static_cast<int>(rng() % 400);
  Mutex mu;
  std::map<uint64_t, std::string> acked_now;  // guarded by mu
  std::atomic<int> acked_count{0};
  std::atomic<uint64_t> watermark{0};  // every record below it is acknowledged
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  std::thread checkpointer;
  if (truncation) {
    checkpointer = std::thread([&] {
      while (!stop) {
        const uint64_t w = watermark.load();
        if (w > truncation->below) {
          truncation->below = w;         // asked for: from here on the records below may be gone
          (void)log->TruncateBefore(w);  // fails once the power is cut; that is fine
        }
        std::this_thread::yield();
      }
    });
  }
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; !stop; ++i) {
        std::string payload = Payload(uint64_t{1000000} * lifetime + 1000 * t + i, 30 + 20 * t);
        log->Append(payload, [&, payload](const Status& s, uint64_t lsn) {
          if (!s.ok()) return;
          MutexLock lock(mu);
          acked_now[lsn] = payload;
          ++acked_count;
          acked_count.notify_all();
          watermark = lsn + 1;  // callbacks run in LSN order
        });
        if (i % 16 == 0) std::this_thread::yield();
      }
    });
  }
  for (int n = acked_count.load(); n < crash_after; n = acked_count.load()) acked_count.wait(n);
  ASSERT_TRUE((lifetime % 2 == 1 ? fs.CrashWithTornWrites(lifetime) : fs.Crash()).ok());
  stop = true;
  for (std::thread& t : threads) t.join();
  if (checkpointer.joinable()) checkpointer.join();
  log.reset();  // the dead process's log: its I/O fails, and so do its pending callbacks
  fs.Restart();

  MutexLock lock(mu);
  for (const auto& [lsn, payload] : acked_now) {
    EXPECT_GE(lsn, first_new);
    acknowledged[lsn] = payload;
    if (truncation) truncation->highest_acked = std::max(truncation->highest_acked, lsn);
  }
}

// Checkpoints while appending: the last segment is retired whenever a truncation covers all that
// is on disk. Over crashes (half with torn writes), every acknowledged record the truncations left
// survives, the next LSN never goes back, and replay finds no gap.
TEST(WalCrashTest, RetiredSegmentsLoseNothingAcrossCrashes) {
  test::TempDir dir;
  test::FaultInjectionFileSystem fs(PosixFileSystem());
  std::map<uint64_t, std::string> acknowledged;
  uint64_t torn_tail_bytes = 0;
  Truncation truncation;
  for (int lifetime = 1; lifetime <= 20; ++lifetime) {
    RunLifetime(fs, dir.path(), lifetime, acknowledged, torn_tail_bytes, &truncation);
    if (::testing::Test::HasFatalFailure()) return;
  }
  auto log = WalLog::Open(fs, dir.path());
  ASSERT_TRUE(log.ok());
  EXPECT_GT((*log)->NextLsn(), truncation.highest_acked);
  Replayed r = ReplayAll(**log, truncation.below);
  EXPECT_EQ(r.stats.lsn_gaps, 0u) << r.stats.report;
}

// The power is cut right after a checkpoint retired the last segment: only the empty segment
// named after the next LSN is left, and recovery continues the LSNs from its name.
TEST(WalCrashTest, CrashAfterRetiringTheLastSegment) {
  test::TempDir dir;
  test::FaultInjectionFileSystem fs(PosixFileSystem());
  {
    auto log = WalLog::Open(fs, dir.path());
    ASSERT_TRUE(log.ok());
    AppendAll(**log, {"a", "b", "c"});
    ASSERT_TRUE((*log)->TruncateBefore(4).ok());
    ASSERT_TRUE(fs.CrashWithTornWrites(7).ok());
  }
  fs.Restart();
  {
    auto log = WalLog::Open(fs, dir.path());
    ASSERT_TRUE(log.ok());
    EXPECT_EQ((*log)->NextLsn(), 4u);
    Replayed r = ReplayAll(**log, 4);
    EXPECT_EQ(r.records.size(), 0u);
    EXPECT_EQ(r.stats.lsn_gaps, 0u) << r.stats.report;
    EXPECT_EQ(AppendAll(**log, {"d"}), (std::vector<uint64_t>{4}));
    ASSERT_TRUE(fs.Crash().ok());
  }
  fs.Restart();
  auto log = WalLog::Open(fs, dir.path());
  ASSERT_TRUE(log.ok());
  Replayed r = ReplayAll(**log, 4);
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_EQ(r.records[0], Rec(4, "d"));
}

// The new segment's name cannot be made durable: nothing is deleted (the old last segment still
// tells the next LSN), and after a crash every record is there.
TEST(WalCrashTest, ARollWhoseDirectorySyncFailsDeletesNothing) {
  test::TempDir dir;
  test::FaultInjectionFileSystem fs(PosixFileSystem());
  {
    auto log = WalLog::Open(fs, dir.path());
    ASSERT_TRUE(log.ok());
    AppendAll(**log, {"a", "b"});
    fs.SetSyncDirError(Status::IoError("injected"));
    EXPECT_FALSE((*log)->TruncateBefore(3).ok());
    fs.SetSyncDirError(Status::Ok());
    EXPECT_TRUE((*log)->Health().ok()) << "a failed roll does not stop the log";
    ASSERT_TRUE(fs.Crash().ok());
  }
  fs.Restart();
  auto log = WalLog::Open(fs, dir.path());
  ASSERT_TRUE(log.ok());
  EXPECT_EQ((*log)->NextLsn(), 3u);
  EXPECT_EQ(ReplayAll(**log, 1).records.size(), 2u);
}

TEST(WalCrashTest, AcknowledgedRecordsSurviveRepeatedCrashes) {
  test::TempDir dir;
  test::FaultInjectionFileSystem fs(PosixFileSystem());
  std::map<uint64_t, std::string> acknowledged;
  uint64_t torn_tail_bytes = 0;
  for (int lifetime = 1; lifetime <= 25; ++lifetime) {
    RunLifetime(fs, dir.path(), lifetime, acknowledged, torn_tail_bytes);
    if (::testing::Test::HasFatalFailure()) return;
  }
  std::printf("%zu records survived 25 crashes; recovery cut %llu torn bytes\n",
              acknowledged.size(), static_cast<unsigned long long>(torn_tail_bytes));
  // A last clean open: everything acknowledged is there, and the log still takes appends.
  auto log = WalLog::Open(fs, dir.path());
  ASSERT_TRUE(log.ok());
  Replayed r = ReplayAll(**log, 1);
  EXPECT_EQ(r.stats.lsn_gaps, 0u) << r.stats.report;
  for (const auto& [lsn, payload] : acknowledged) {
    ASSERT_LE(lsn, r.records.size());
    EXPECT_EQ(r.records[lsn - 1], Rec(lsn, payload));
  }
  const uint64_t next = (*log)->NextLsn();
  EXPECT_EQ(AppendAll(**log, {"after the storm"}), (std::vector<uint64_t>{next}));
}

// A crash right after a segment roll, before anything in the new segment was synced: the new
// segment's creation is lost with it, and recovery continues from the old segment.
TEST(WalCrashTest, CrashRightAfterARoll) {
  test::TempDir dir;
  test::FaultInjectionFileSystem fs(PosixFileSystem());
  WalOptions options;
  options.segment_bytes = 256;
  {
    auto log = WalLog::Open(fs, dir.path(), options);
    ASSERT_TRUE(log.ok());
    AppendAll(**log, {Payload(1, 100), Payload(2, 100)});  // the second fills segment 1
    fs.SetWriteError(Status::IoError("injected"));         // the roll's write never syncs
    CallbackLog callbacks;
    (*log)->Append(Payload(3, 100), callbacks.Callback());
    EXPECT_FALSE(callbacks.WaitFor(1)[0].first.ok());
    fs.SetWriteError(Status::Ok());
    ASSERT_TRUE(fs.Crash().ok());
  }
  fs.Restart();
  auto log = WalLog::Open(fs, dir.path(), options);
  ASSERT_TRUE(log.ok());
  Replayed r = ReplayAll(**log, 1);
  EXPECT_EQ(r.records.size(), 2u);
  EXPECT_EQ(r.stats.lsn_gaps, 0u);
  EXPECT_EQ((*log)->NextLsn(), 3u);
  EXPECT_EQ(AppendAll(**log, {"3"}), (std::vector<uint64_t>{3}));
}

// One group that fills several segments: no segment may be created before the directory entry
// of the one before it is durable, or a crash could keep a later segment and lose an earlier one.
TEST(WalCrashTest, NoSegmentIsCreatedBeforeItsPredecessorIsDurable) {
  test::TempDir dir;
  test::FaultInjectionFileSystem fs(PosixFileSystem());
  WalOptions options;
  options.segment_bytes = 256;
  auto log = WalLog::Open(fs, dir.path(), options);
  ASSERT_TRUE(log.ok());
  AppendAll(**log, {"first"});  // segment 1 exists, and its name is durable

  WriterHold hold(**log);  // the next records form one group
  CallbackLog callbacks;
  for (int i = 0; i < 6; ++i) (*log)->Append(Payload(i, 100), callbacks.Callback());
  fs.SetSyncDirError(Status::IoError("injected"));
  hold.Release();
  for (const auto& [status, lsn] : callbacks.WaitFor(6)) EXPECT_FALSE(status.ok());

  // Segment 1 filled up; the group rolled to a new segment, whose name could not be made
  // durable, so the group stopped there instead of creating a third segment.
  auto names = PosixFileSystem().ListDir(dir.path());
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(names->size(), 2u);
  EXPECT_TRUE((*log)->Health().code() == StatusCode::kIoError);
}

}  // namespace
}  // namespace trainwatch::storage::wal

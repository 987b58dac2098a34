#include "storage/wal/wal_log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <thread>

#include "common/testing/fault_injection_fs.h"
#include "common/testing/temp_dir.h"
#include "storage/wal/wal_format.h"
#include "storage/wal/wal_test_util.h"
#include "storage/wal/wal_writer.h"

namespace trainwatch::storage::wal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class WalLogTest : public ::testing::Test {
 protected:
  std::unique_ptr<WalLog> OpenLog(WalOptions options = {}) {
    auto log = WalLog::Open(fs_, dir_.path(), options);
    EXPECT_TRUE(log.ok()) << log.status().ToString();
    return log.ok() ? std::move(log).value() : nullptr;
  }
  std::vector<std::string> SegmentNames() {
    std::vector<std::string> names;
    auto listed = fs_.ListDir(dir_.path());  // named: a range-for would not keep the Result alive
    EXPECT_TRUE(listed.ok());
    if (!listed.ok()) return names;
    for (const std::string& name : *listed) {
      if (ParseSegmentFileName(name)) names.push_back(name);
    }
    return names;
  }
  std::string SegmentPath(uint64_t first_lsn) { return dir_.Join(SegmentFileName(first_lsn)); }

  FileSystem& fs_ = PosixFileSystem();
  test::TempDir dir_;
};

TEST_F(WalLogTest, OpenRejectsBadOptions) {
  WalOptions options;
  options.segment_bytes = 0;
  EXPECT_EQ(WalLog::Open(fs_, dir_.path(), options).status().code(), StatusCode::kInvalidArgument);
  options = WalOptions();
  options.max_record_bytes = uint64_t{kMaxRecordBytes} + 1;
  EXPECT_EQ(WalLog::Open(fs_, dir_.path(), options).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(WalLogTest, EmptyLogStartsAtOne) {
  auto log = OpenLog();
  EXPECT_EQ(log->NextLsn(), 1u);
  Replayed r = ReplayAll(*log, 1);
  EXPECT_TRUE(r.records.empty());
  EXPECT_EQ(r.stats.lsn_gaps, 0u);
  EXPECT_EQ(AppendAll(*log, {"a", "b", "c"}), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(log->NextLsn(), 4u);
  EXPECT_THAT(SegmentNames(), ElementsAre("00000000000000000001.wal"));
}

TEST_F(WalLogTest, OpenCreatesTheDirectory) {
  auto log = WalLog::Open(fs_, dir_.Join("a/b/wal/"));
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ(AppendAll(**log, {"x"}), (std::vector<uint64_t>{1}));
  EXPECT_TRUE(fs_.Exists(dir_.Join("a/b/wal/00000000000000000001.wal")));
}

TEST_F(WalLogTest, ReopenReplaysAndContinuesInANewSegment) {
  {
    auto log = OpenLog();
    AppendAll(*log, {"one", "two", "three"});
  }
  auto log = OpenLog();
  EXPECT_EQ(log->NextLsn(), 4u);
  Replayed r = ReplayAll(*log);
  EXPECT_THAT(r.records, ElementsAre(Rec(1, "one"), Rec(2, "two"), Rec(3, "three")));
  EXPECT_EQ(r.stats.records, 3u);
  EXPECT_EQ(r.stats.bytes, 11u);
  EXPECT_EQ(r.stats.first_lsn, 1u);
  EXPECT_EQ(r.stats.last_lsn, 3u);
  EXPECT_EQ(r.stats.torn_tail_bytes, 0u);
  EXPECT_EQ(r.stats.corrupt_records, 0u);
  EXPECT_EQ(r.stats.report, "");

  EXPECT_EQ(AppendAll(*log, {"four"}), (std::vector<uint64_t>{4}));
  EXPECT_THAT(SegmentNames(), ElementsAre("00000000000000000001.wal", "00000000000000000004.wal"));
  log.reset();
  log = OpenLog();
  EXPECT_EQ(ReplayAll(*log).records.size(), 4u);
}

TEST_F(WalLogTest, ReopeningWithoutAppendsCreatesNoSegments) {
  { AppendAll(*OpenLog(), {"a"}); }
  for (int i = 0; i < 3; ++i) {
    auto log = OpenLog();
    ReplayAll(*log);
  }
  EXPECT_EQ(SegmentNames().size(), 1u);
}

TEST_F(WalLogTest, ReplayFromLsnSkipsEarlierRecords) {
  WalOptions options;
  options.segment_bytes = 200;
  {
    auto log = OpenLog(options);
    std::vector<std::string> records;
    for (int i = 1; i <= 50; ++i) records.push_back(Payload(i));
    AppendAll(*log, records);
  }
  auto log = OpenLog(options);
  Replayed r = ReplayAll(*log, 37);
  ASSERT_EQ(r.records.size(), 14u);
  EXPECT_EQ(r.records.front(), Rec(37, Payload(37)));
  EXPECT_EQ(r.stats.first_lsn, 37u);
  EXPECT_EQ(r.stats.last_lsn, 50u);
  EXPECT_EQ(r.stats.lsn_gaps, 0u);
  EXPECT_TRUE(ReplayAll(*log, 51).records.empty());
  EXPECT_EQ(ReplayAll(*log, 51).stats.lsn_gaps, 0u);
}

TEST_F(WalLogTest, ReplayAfterAppendIsRefused) {
  auto log = OpenLog();
  AppendAll(*log, {"a"});
  auto r = log->Replay(0, [](uint64_t, std::string_view) { return Status::Ok(); });
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(WalLogTest, ReplayStopsAtTheCallbacksError) {
  { AppendAll(*OpenLog(), {"a", "b", "c"}); }
  auto log = OpenLog();
  int calls = 0;
  auto r = log->Replay(0, [&](uint64_t lsn, std::string_view) {
    ++calls;
    return lsn == 2 ? Status::InvalidArgument("bad point") : Status::Ok();
  });
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("record 2"));
}

TEST_F(WalLogTest, AppendWithoutReplayContinuesAfterExistingRecords) {
  { AppendAll(*OpenLog(), {"a", "b"}); }
  auto log = OpenLog();
  EXPECT_EQ(AppendAll(*log, {"c"}), (std::vector<uint64_t>{3}));
}

TEST_F(WalLogTest, CloseDrainsThenRefuses) {
  auto log = OpenLog();
  CallbackLog callbacks;
  for (int i = 0; i < 100; ++i) log->Append(Payload(i), callbacks.Callback());
  log->Close();
  log->Close();  // idempotent
  log->Append("late", callbacks.Callback());
  auto results = callbacks.WaitFor(101);
  for (int i = 0; i < 100; ++i) {
    EXPECT_TRUE(results[i].first.ok());
    EXPECT_EQ(results[i].second, static_cast<uint64_t>(i + 1));
  }
  EXPECT_EQ(results[100].first.code(), StatusCode::kUnavailable);
  EXPECT_EQ(results[100].second, 0u);
  log.reset();
  EXPECT_EQ(ReplayAll(*OpenLog()).records.size(), 100u);
}

TEST_F(WalLogTest, DestructorDrainsTheQueue) {
  CallbackLog callbacks;
  {
    auto log = OpenLog();
    for (int i = 0; i < 50; ++i) log->Append(Payload(i), callbacks.Callback());
  }
  for (const auto& [status, lsn] : callbacks.WaitFor(50)) EXPECT_TRUE(status.ok());
}

TEST_F(WalLogTest, OversizedRecordIsRefusedWithoutTakingAnLsn) {
  WalOptions options;
  options.max_record_bytes = 1000;
  auto log = OpenLog(options);
  CallbackLog callbacks;
  log->Append(std::string(1001, 'x'), callbacks.Callback());
  auto results = callbacks.WaitFor(1);
  EXPECT_EQ(results[0].first.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(results[0].second, 0u);
  EXPECT_EQ(log->NextLsn(), 1u);
  EXPECT_EQ(AppendAll(*log, {std::string(1000, 'x')}), (std::vector<uint64_t>{1}));
}

TEST_F(WalLogTest, CallbacksMayAppendAndClose) {
  auto log = OpenLog();
  std::promise<uint64_t> second;
  log->Append("first", [&](const Status& s, uint64_t) {
    log->Append("second", [&](const Status& s2, uint64_t lsn) { second.set_value(lsn); });
    log->Close();  // from the writer thread: must not deadlock
  });
  EXPECT_EQ(second.get_future().get(), 2u);
  log.reset();
  EXPECT_EQ(ReplayAll(*OpenLog()).records.size(), 2u);
}

TEST_F(WalLogTest, SegmentsRollAtTheSizeOption) {
  WalOptions options;
  options.segment_bytes = 1024;
  auto log = OpenLog(options);
  std::vector<std::string> records;
  for (int i = 1; i <= 100; ++i) records.push_back(Payload(i, 100));
  AppendAll(*log, records);
  std::vector<std::string> names = SegmentNames();
  ASSERT_GT(names.size(), 10u);
  uint64_t total = 0;
  for (const std::string& name : names) {
    uint64_t size = *fs_.FileSize(dir_.Join(name));
    EXPECT_LE(size, options.segment_bytes) << name;
    total += size;
  }
  EXPECT_EQ(log->DiskBytes(), total);
  WalStats stats = log->Stats();
  EXPECT_EQ(stats.segments, names.size());
  EXPECT_EQ(stats.disk_bytes, total);
  EXPECT_EQ(stats.bytes_written, total);
  EXPECT_EQ(stats.appends, 100u);

  // A record larger than a segment gets one of its own.
  AppendAll(*log, {std::string(5000, 'z')});
  EXPECT_EQ(SegmentNames().size(), names.size() + 1);
  log.reset();
  Replayed r = ReplayAll(*OpenLog(options));
  ASSERT_EQ(r.records.size(), 101u);
  for (int i = 1; i <= 100; ++i) EXPECT_EQ(r.records[i - 1].second, records[i - 1]);
}

TEST_F(WalLogTest, TruncateBeforeDeletesWholeSegmentsBelowTheLsn) {
  WalOptions options;
  options.segment_bytes = 1024;
  auto log = OpenLog(options);
  std::vector<std::string> records;
  for (int i = 1; i <= 100; ++i) records.push_back(Payload(i, 100));
  AppendAll(*log, records);
  std::vector<uint64_t> firsts;
  for (const std::string& name : SegmentNames()) firsts.push_back(*ParseSegmentFileName(name));
  ASSERT_GT(firsts.size(), 3u);

  const uint64_t before = log->DiskBytes();
  ASSERT_TRUE(log->TruncateBefore(1).ok());
  EXPECT_EQ(SegmentNames().size(), firsts.size());
  // An LSN inside the third segment: the first two go, the third stays.
  ASSERT_TRUE(log->TruncateBefore(firsts[2] + 1).ok());
  EXPECT_EQ(*ParseSegmentFileName(SegmentNames().front()), firsts[2]);
  EXPECT_LT(log->DiskBytes(), before);
  // Up to the last record: everything but the active segment goes.
  ASSERT_TRUE(log->TruncateBefore(100).ok());
  EXPECT_THAT(SegmentNames(), ElementsAre(SegmentFileName(firsts.back())));
  EXPECT_EQ(log->Stats().segments, 1u);
  // Appending still works, into the active segment.
  EXPECT_EQ(AppendAll(*log, {"more"}), (std::vector<uint64_t>{101}));
  log.reset();

  log = OpenLog(options);
  Replayed r = ReplayAll(*log, firsts.back());
  EXPECT_EQ(r.stats.first_lsn, firsts.back());
  EXPECT_EQ(r.stats.last_lsn, 101u);
  EXPECT_EQ(r.stats.lsn_gaps, 0u);
  // Asking for records that were truncated away reports the gap.
  Replayed early = ReplayAll(*log, 1);
  EXPECT_EQ(early.stats.lsn_gaps, 1u);
  EXPECT_THAT(early.stats.report, HasSubstr("lsns 1.." + std::to_string(firsts.back() - 1)));
  // From 0 means "whatever is kept": no gap.
  EXPECT_EQ(ReplayAll(*log, 0).stats.lsn_gaps, 0u);
}

TEST_F(WalLogTest, TruncateBeforeKeepsTheLastSegmentWhileItHoldsARecordStillNeeded) {
  { AppendAll(*OpenLog(), {"a", "b"}); }
  auto log = OpenLog();
  ASSERT_TRUE(log->TruncateBefore(2).ok());
  EXPECT_THAT(SegmentNames(), ElementsAre(SegmentFileName(1)));
  EXPECT_EQ(ReplayAll(*log).records.size(), 2u);
}

// A checkpoint with no newer writes: the last segment goes too, and an empty one named after the
// next LSN stays in its place, so no byte of a covered record is left on disk.
TEST_F(WalLogTest, TruncateBeforeRetiresTheLastSegmentOnceEverythingInItIsCovered) {
  auto log = OpenLog();
  EXPECT_EQ(AppendAll(*log, {"a", "b", "c"}), (std::vector<uint64_t>{1, 2, 3}));
  ASSERT_TRUE(log->TruncateBefore(4).ok());
  EXPECT_THAT(SegmentNames(), ElementsAre(SegmentFileName(4)));
  EXPECT_EQ(*fs_.FileSize(dir_.path() + "/" + SegmentFileName(4)), 0u);
  EXPECT_EQ(log->DiskBytes(), 0u);
  EXPECT_EQ(log->Stats().segments, 1u);
  ASSERT_TRUE(log->TruncateBefore(4).ok());  // again: nothing to do
  EXPECT_THAT(SegmentNames(), ElementsAre(SegmentFileName(4)));
  // A truncation past the end also retires (the records it covers need not have been written).
  log.reset();
  log = OpenLog();
  EXPECT_EQ(log->NextLsn(), 4u);
  Replayed empty = ReplayAll(*log, 4);
  EXPECT_EQ(empty.records.size(), 0u);
  EXPECT_EQ(empty.stats.lsn_gaps, 0u) << empty.stats.report;
  EXPECT_EQ(AppendAll(*log, {"d", "e"}), (std::vector<uint64_t>{4, 5}));
  EXPECT_THAT(SegmentNames(), ElementsAre(SegmentFileName(4)));  // the placeholder, reused
  ASSERT_TRUE(log->TruncateBefore(5).ok());                      // 5 is still needed
  EXPECT_THAT(SegmentNames(), ElementsAre(SegmentFileName(4)));
  ASSERT_TRUE(log->TruncateBefore(1000).ok());
  EXPECT_THAT(SegmentNames(), ElementsAre(SegmentFileName(6)));
  EXPECT_EQ(AppendAll(*log, {"f"}), (std::vector<uint64_t>{6}));
  log.reset();
  log = OpenLog();
  Replayed r = ReplayAll(*log, 6);
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_EQ(r.records[0], Rec(6, "f"));
  EXPECT_EQ(r.stats.lsn_gaps, 0u) << r.stats.report;
}

// The engine's last checkpoint comes after the log's Close: a closed, drained log retires its
// last segment too, and the next open continues after it.
TEST_F(WalLogTest, AClosedLogRetiresItsLastSegment) {
  auto log = OpenLog();
  EXPECT_EQ(AppendAll(*log, {"a", "b", "c"}), (std::vector<uint64_t>{1, 2, 3}));
  log->Close();
  ASSERT_TRUE(log->TruncateBefore(3).ok());  // 3 is still needed
  EXPECT_THAT(SegmentNames(), ElementsAre(SegmentFileName(1)));
  ASSERT_TRUE(log->TruncateBefore(4).ok());
  EXPECT_THAT(SegmentNames(), ElementsAre(SegmentFileName(4)));
  EXPECT_EQ(*fs_.FileSize(SegmentPath(4)), 0u);
  EXPECT_EQ(log->DiskBytes(), 0u);
  log.reset();
  EXPECT_EQ(*fs_.FileSize(SegmentPath(4)), 0u) << "the placeholder stays empty after the close";
  log = OpenLog();
  EXPECT_EQ(log->NextLsn(), 4u);
  Replayed empty = ReplayAll(*log, 4);
  EXPECT_EQ(empty.records.size(), 0u);
  EXPECT_EQ(empty.stats.lsn_gaps, 0u) << empty.stats.report;
  EXPECT_EQ(AppendAll(*log, {"d"}), (std::vector<uint64_t>{4}));
  log.reset();
  log = OpenLog();
  Replayed r = ReplayAll(*log, 1);
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_EQ(r.records[0], Rec(4, "d"));
}

// Records queued behind the writer when the truncation comes go to the new segment.
TEST_F(WalLogTest, RetiringWhileRecordsAreQueuedKeepsThem) {
  auto log = OpenLog();
  AppendAll(*log, {"a"});
  WriterHold hold(*log);  // lsn 2, written; its callback holds the writer
  CallbackLog callbacks;
  log->Append("queued", callbacks.Callback());  // lsn 3, waits in the queue
  ASSERT_TRUE(log->TruncateBefore(3).ok());     // 1 and 2 are covered and on disk
  EXPECT_THAT(SegmentNames(), ElementsAre(SegmentFileName(3)));
  hold.Release();
  EXPECT_TRUE(callbacks.WaitFor(1)[0].first.ok());
  log.reset();
  log = OpenLog();
  Replayed r = ReplayAll(*log, 3);
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_EQ(r.records[0], Rec(3, "queued"));
  EXPECT_EQ(r.stats.lsn_gaps, 0u) << r.stats.report;
}

TEST_F(WalLogTest, TruncateBeforeConcurrentWithAppends) {
  WalOptions options;
  options.segment_bytes = 512;
  auto log = OpenLog(options);
  std::atomic<bool> done{false};
  std::thread truncator([&] {
    while (!done) {
      ASSERT_TRUE(log->TruncateBefore(log->NextLsn()).ok());
      std::this_thread::yield();
    }
  });
  std::vector<std::string> records;
  for (int i = 1; i <= 300; ++i) records.push_back(Payload(i, 60));
  for (int round = 0; round < 5; ++round) AppendAll(*log, records);
  done = true;
  truncator.join();
  {
    // What the truncator left: no corruption, no gap, the last record there unless retired.
    log.reset();
    log = OpenLog(options);
    Replayed r = ReplayAll(*log, 0);
    EXPECT_EQ(r.stats.corrupt_records, 0u) << r.stats.report;
    EXPECT_EQ(r.stats.lsn_gaps, 0u) << r.stats.report;
    if (!r.records.empty()) {
      EXPECT_EQ(r.stats.last_lsn, 1500u);
    }
    EXPECT_EQ(log->NextLsn(), 1501u);
  }
  ASSERT_TRUE(log->TruncateBefore(log->NextLsn()).ok());
  EXPECT_THAT(SegmentNames(), ElementsAre(SegmentFileName(1501)));
  log.reset();
  EXPECT_EQ(OpenLog(options)->NextLsn(), 1501u);
}

// The last record is cut at every byte: recovery keeps the others, cuts exactly the torn bytes,
// and appends go on in a new segment.
TEST_F(WalLogTest, TornTailAtEveryByteOfTheLastRecord) {
  const std::vector<std::string> records = {"first", "second", "the last record, to be torn"};
  test::TempDir source;
  {
    auto log = WalLog::Open(fs_, source.path());
    ASSERT_TRUE(log.ok());
    AppendAll(**log, records);
  }
  const std::string name = SegmentFileName(1);
  const std::string full = *fs_.ReadFile(source.Join(name));
  const uint64_t last_start = full.size() - (kRecordHeaderSize + records[2].size());
  for (uint64_t cut = last_start + 1; cut < full.size(); ++cut) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    test::TempDir dir;
    WriteUnsynced(dir.Join(name), full.substr(0, cut));
    auto log = WalLog::Open(fs_, dir.path());
    ASSERT_TRUE(log.ok());
    EXPECT_EQ((*log)->NextLsn(), 3u);
    EXPECT_EQ(*fs_.FileSize(dir.Join(name)), last_start);  // cut by Open
    Replayed r = ReplayAll(**log);
    ASSERT_EQ(r.records.size(), 2u);
    EXPECT_EQ(r.stats.torn_tail_bytes, cut - last_start);
    EXPECT_THAT(r.stats.report, HasSubstr(name));
    EXPECT_THAT(r.stats.report, HasSubstr("offset " + std::to_string(last_start)));
    EXPECT_EQ(AppendAll(**log, {"again"}), (std::vector<uint64_t>{3}));
    log->reset();

    auto reopened = WalLog::Open(fs_, dir.path());
    ASSERT_TRUE(reopened.ok());
    Replayed again = ReplayAll(**reopened);
    EXPECT_EQ(again.records.size(), 3u);
    EXPECT_EQ(again.records.back(), Rec(3, "again"));
    EXPECT_EQ(again.stats.torn_tail_bytes, 0u);
    EXPECT_EQ(again.stats.report, "");
  }
}

// A crash can leave a new segment with a torn header and no record: Open cuts it to an empty
// placeholder that keeps the next LSN, and the next segment reuses it.
TEST_F(WalLogTest, TornHeaderOfTheLastSegmentKeepsTheNextLsn) {
  test::TempDir source;
  {
    auto log = WalLog::Open(fs_, source.path());
    ASSERT_TRUE(log.ok());
    AppendAll(**log, {"a", "b"});
  }
  const std::string seg1 = *fs_.ReadFile(source.Join(SegmentFileName(1)));
  std::string seg3;
  EncodeSegmentHeader(3, &seg3);
  EncodeRecord(3, "c", &seg3);
  for (uint64_t cut = 0; cut < seg3.size(); ++cut) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    test::TempDir dir;
    WriteUnsynced(dir.Join(SegmentFileName(1)), seg1);
    WriteUnsynced(dir.Join(SegmentFileName(3)), seg3.substr(0, cut));
    auto log = WalLog::Open(fs_, dir.path());
    ASSERT_TRUE(log.ok());
    EXPECT_EQ((*log)->NextLsn(), 3u);
    EXPECT_EQ(*fs_.FileSize(dir.Join(SegmentFileName(3))), 0u);
    Replayed r = ReplayAll(**log, 1);
    EXPECT_EQ(r.records.size(), 2u);
    EXPECT_EQ(r.stats.torn_tail_bytes, cut);
    EXPECT_EQ(r.stats.lsn_gaps, 0u);
    EXPECT_EQ(AppendAll(**log, {"c"}), (std::vector<uint64_t>{3}));
    log->reset();
    auto reopened = WalLog::Open(fs_, dir.path());
    ASSERT_TRUE(reopened.ok());
    EXPECT_EQ(ReplayAll(**reopened).records.size(), 3u);
  }
}

// A bad record in a segment that is not the last: reported with file and offset, the rest of that
// segment skipped, replay goes on with the next segment, and the missing LSNs are reported.
TEST_F(WalLogTest, CorruptionInAnEarlierSegmentSkipsTheRestOfIt) {
  WalOptions options;
  options.segment_bytes = 4096;
  std::vector<std::string> records;
  for (int i = 1; i <= 200; ++i) records.push_back(Payload(i, 100));
  {
    auto log = OpenLog(options);
    AppendAll(*log, records);
  }
  std::vector<std::string> names = SegmentNames();
  ASSERT_GE(names.size(), 3u);
  const uint64_t second_first = *ParseSegmentFileName(names[1]);
  const uint64_t third_first = *ParseSegmentFileName(names[2]);
  // Flip a payload bit in the 4th record of the second segment.
  std::string contents = *fs_.ReadFile(dir_.Join(names[1]));
  const uint64_t record_size = kRecordHeaderSize + records[0].size();
  const uint64_t bad_offset = kSegmentHeaderSize + 3 * record_size;
  contents[bad_offset + kRecordHeaderSize + 5] ^= 0x10;
  WriteUnsynced(dir_.Join(names[1]), contents);

  auto log = OpenLog(options);
  Replayed r = ReplayAll(*log, 1);
  EXPECT_EQ(r.stats.corrupt_records, 1u);
  EXPECT_EQ(r.stats.lsn_gaps, 1u);
  EXPECT_THAT(r.stats.report, HasSubstr(names[1]));
  EXPECT_THAT(r.stats.report,
              HasSubstr("checksum mismatch at offset " + std::to_string(bad_offset)));
  EXPECT_THAT(r.stats.report, HasSubstr("lsns " + std::to_string(second_first + 3) + ".." +
                                        std::to_string(third_first - 1) + " missing"));
  EXPECT_EQ(r.records.size(), 200 - (third_first - second_first - 3));
  EXPECT_EQ(r.stats.last_lsn, 200u);
  for (const auto& [lsn, payload] : r.records) EXPECT_EQ(payload, records[lsn - 1]);
  // The earlier segment is not modified: it is not the last.
  EXPECT_EQ(*fs_.ReadFile(dir_.Join(names[1])), contents);
}

TEST_F(WalLogTest, MissingMiddleSegmentIsAGap) {
  WalOptions options;
  options.segment_bytes = 1024;
  {
    auto log = OpenLog(options);
    std::vector<std::string> records;
    for (int i = 1; i <= 60; ++i) records.push_back(Payload(i, 100));
    AppendAll(*log, records);
  }
  std::vector<std::string> names = SegmentNames();
  ASSERT_GE(names.size(), 3u);
  ASSERT_TRUE(fs_.RemoveFile(dir_.Join(names[1])).ok());
  Replayed r = ReplayAll(*OpenLog(options), 1);
  EXPECT_EQ(r.stats.lsn_gaps, 1u);
  EXPECT_EQ(r.stats.corrupt_records, 0u);
  EXPECT_EQ(r.stats.last_lsn, 60u);
}

TEST_F(WalLogTest, BadHeaderInAnEarlierSegmentSkipsIt) {
  WalOptions options;
  options.segment_bytes = 1024;
  {
    auto log = OpenLog(options);
    std::vector<std::string> records;
    for (int i = 1; i <= 60; ++i) records.push_back(Payload(i, 100));
    AppendAll(*log, records);
  }
  std::vector<std::string> names = SegmentNames();
  std::string contents = *fs_.ReadFile(dir_.Join(names[0]));
  contents[0] = 'X';
  WriteUnsynced(dir_.Join(names[0]), contents);
  Replayed r = ReplayAll(*OpenLog(options), 1);
  EXPECT_EQ(r.stats.corrupt_records, 1u);
  EXPECT_EQ(r.stats.lsn_gaps, 1u);
  EXPECT_THAT(r.stats.report, HasSubstr("bad segment magic; segment skipped"));
  EXPECT_EQ(r.stats.first_lsn, *ParseSegmentFileName(names[1]));
}

// Any single corrupted byte anywhere in a two-segment log: Open and Replay never fail, every
// replayed record is the one written under that LSN, and appends then work.
TEST_F(WalLogTest, ByteFlipsAnywhereNeverBreakRecovery) {
  test::TempDir source;
  WalOptions options;
  options.segment_bytes = 200;  // three 56-byte records per segment
  std::vector<std::string> records;
  for (int i = 1; i <= 6; ++i) records.push_back(Payload(i, 40));
  {
    auto log = WalLog::Open(fs_, source.path(), options);
    ASSERT_TRUE(log.ok());
    AppendAll(**log, records);
  }
  std::vector<std::string> names = *fs_.ListDir(source.path());
  ASSERT_EQ(names.size(), 2u);
  std::vector<std::string> originals;
  for (const std::string& name : names) originals.push_back(*fs_.ReadFile(source.Join(name)));
  for (size_t file = 0; file < names.size(); ++file) {
    for (size_t byte = 0; byte < originals[file].size(); ++byte) {
      SCOPED_TRACE(names[file] + " byte " + std::to_string(byte));
      test::TempDir dir;
      for (size_t f = 0; f < names.size(); ++f) {
        std::string contents = originals[f];
        if (f == file) contents[byte] = static_cast<char>(contents[byte] ^ 0x5a);
        WriteUnsynced(dir.Join(names[f]), contents);
      }
      auto log = WalLog::Open(fs_, dir.path(), options);
      ASSERT_TRUE(log.ok()) << log.status().ToString();
      Replayed r = ReplayAll(**log, 1);
      EXPECT_LT(r.records.size(), records.size());
      EXPECT_FALSE(r.stats.report.empty());
      for (const auto& [lsn, payload] : r.records) EXPECT_EQ(payload, records[lsn - 1]);
      if (byte % 16 == 0) {  // appending costs two syncs: check a sample
        const uint64_t next = (*log)->NextLsn();
        EXPECT_EQ(AppendAll(**log, {"after"}), (std::vector<uint64_t>{next}));
      }
    }
  }
}

// Eight threads append concurrently: callbacks run one at a time in LSN order with no LSN
// skipped, each thread's records get increasing LSNs, and every record replays exactly once.
TEST_F(WalLogTest, ConcurrentAppendersFromEightThreads) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 2000;
  auto log = OpenLog();
  Mutex mu;
  std::map<uint64_t, std::string> by_lsn;  // guarded by mu
  std::atomic<uint64_t> last_lsn{0};
  std::atomic<int> in_callback{0};
  std::atomic<int> failures{0};
  std::atomic<int> completed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        std::string payload = "t" + std::to_string(t) + "-" + std::to_string(i);
        log->Append(payload, [&, payload](const Status& s, uint64_t lsn) {
          if (in_callback.fetch_add(1) != 0) ++failures;  // not one at a time
          if (!s.ok() || lsn != last_lsn.load() + 1) ++failures;
          last_lsn = lsn;
          {
            MutexLock lock(mu);
            by_lsn[lsn] = payload;
          }
          in_callback.fetch_sub(1);
          ++completed;
        });
      }
    });
  }
  for (std::thread& t : threads) t.join();
  log->Close();
  EXPECT_EQ(completed.load(), kThreads * kPerThread);
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(last_lsn.load(), uint64_t{kThreads * kPerThread});
  WalStats stats = log->Stats();
  EXPECT_EQ(stats.appends, uint64_t{kThreads * kPerThread});
  EXPECT_GE(stats.groups, 1u);
  EXPECT_LE(stats.groups, stats.appends);
  EXPECT_EQ(stats.queued_bytes, 0u);

  // Per thread, LSNs increase in the order of the thread's appends.
  std::map<int, int> next_index;
  for (const auto& [lsn, payload] : by_lsn) {
    int t = std::stoi(payload.substr(1));
    int i = std::stoi(payload.substr(payload.find('-') + 1));
    EXPECT_EQ(i, next_index[t]++) << payload;
  }
  log.reset();
  Replayed r = ReplayAll(*OpenLog());
  ASSERT_EQ(r.records.size(), size_t{kThreads * kPerThread});
  for (const auto& [lsn, payload] : r.records) EXPECT_EQ(by_lsn[lsn], payload);
}

// With the writer held inside a callback, appends fill the queue up to max_queue_bytes and the
// next one blocks until the writer drains it.
TEST_F(WalLogTest, AppendBlocksWhenTheQueueIsFull) {
  WalOptions options;
  options.max_queue_bytes = 1000;
  auto log = OpenLog(options);
  WriterHold hold(*log);
  CallbackLog callbacks;
  for (int i = 0; i < 10; ++i) log->Append(std::string(100, 'q'), callbacks.Callback());
  std::promise<void> blocked_returned;
  std::thread blocked([&] {
    log->Append(std::string(100, 'b'), callbacks.Callback());
    blocked_returned.set_value();
  });
  auto returned = blocked_returned.get_future();
  EXPECT_EQ(returned.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
  EXPECT_EQ(log->Stats().queued_bytes, 1000u);
  hold.Release();
  returned.wait();
  blocked.join();
  for (const auto& [status, lsn] : callbacks.WaitFor(11)) EXPECT_TRUE(status.ok());
  EXPECT_EQ(log->Stats().backpressure_waits, 1u);
}

TEST_F(WalLogTest, GroupsStopAtMaxGroupBytes) {
  WalOptions options;
  options.max_group_bytes = 250;
  auto log = OpenLog(options);
  WriterHold hold(*log);
  std::vector<std::string> records(10, std::string(100, 'g'));
  records.push_back(std::string(1000, 'G'));  // bigger than a group: a group of its own
  CallbackLog callbacks;
  for (const std::string& r : records) log->Append(r, callbacks.Callback());
  hold.Release();
  for (const auto& [status, lsn] : callbacks.WaitFor(records.size())) EXPECT_TRUE(status.ok());
  EXPECT_EQ(log->Stats().groups, 1u + 5u + 1u);
}

TEST_F(WalLogTest, WriteErrorFailsTheGroupAndStopsTheLog) {
  test::FaultInjectionFileSystem fault(fs_);
  auto opened = WalLog::Open(fault, dir_.path());
  ASSERT_TRUE(opened.ok());
  WalLog& log = **opened;
  AppendAll(log, {"ok"});
  fault.SetWriteError(Status::IoError("injected EIO"));
  CallbackLog callbacks;
  log.Append("doomed", callbacks.Callback());
  auto first = callbacks.WaitFor(1);
  EXPECT_EQ(first[0].first.code(), StatusCode::kIoError);
  EXPECT_EQ(first[0].second, 2u);
  EXPECT_THAT(log.Health().message(), HasSubstr("injected EIO"));

  fault.SetWriteError(Status::Ok());  // the disk "recovers": the log must stay stopped
  log.Append("refused", callbacks.Callback());
  auto second = callbacks.WaitFor(2);
  EXPECT_EQ(second[1].first.code(), StatusCode::kIoError);
  EXPECT_EQ(second[1].second, 0u);
  EXPECT_EQ(log.Stats().failed_appends, 2u);
  opened->reset();
  Replayed r = ReplayAll(**WalLog::Open(fs_, dir_.path()));
  EXPECT_THAT(r.records, ElementsAre(Rec(1, "ok")));
}

}  // namespace
}  // namespace trainwatch::storage::wal

namespace trainwatch::storage::wal {
namespace {

// A full disk with a retry clock: the failed record and appends while stopped are refused with
// ResourceExhausted; attempts to start afresh fail while the disk is full and succeed once it is
// not, and the log takes appends again without a restart. Replay holds every acknowledged record.
TEST(WalLogRetryTest, AFullDiskStopsTheLogUntilARetryOnTheClockSucceeds) {
  test::TempDir dir;
  test::FaultInjectionFileSystem fault(PosixFileSystem());
  ManualClock clock;
  WalOptions options;
  options.retry_clock = &clock;
  options.retry_seconds = 1;
  auto opened = WalLog::Open(fault, dir.path(), options);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  WalLog& log = **opened;
  AppendAll(log, {"ok"});

  fault.SetWriteError(Status::ResourceExhausted("injected ENOSPC"));
  CallbackLog callbacks;
  log.Append("doomed", callbacks.Callback());
  EXPECT_EQ(callbacks.WaitFor(1)[0].first.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(log.Health().code(), StatusCode::kResourceExhausted);
  log.Append("refused while stopped", callbacks.Callback());
  auto refused = callbacks.WaitFor(2);
  EXPECT_EQ(refused[1].first.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(refused[1].second, 0u);

  clock.AwaitWaiters(1);
  clock.Advance(1);  // a retry while the disk is still full fails
  clock.AwaitWaiters(1);
  EXPECT_EQ(log.Stats().restarts, 0u);
  EXPECT_EQ(log.Health().code(), StatusCode::kResourceExhausted);

  fault.SetWriteError(Status::Ok());  // space comes back
  clock.Advance(1);
  clock.AwaitWaiters(1);
  EXPECT_EQ(log.Stats().restarts, 1u);
  EXPECT_TRUE(log.Health().ok()) << log.Health().ToString();
  EXPECT_EQ(AppendAll(log, {"after"}), std::vector<uint64_t>{3});
  opened->reset();

  auto reopened = WalLog::Open(PosixFileSystem(), dir.path());
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  Replayed r = ReplayAll(**reopened);
  EXPECT_THAT(r.records, ElementsAre(Rec(1, "ok"), Rec(3, "after")));
  EXPECT_EQ(r.stats.corrupt_records, 0u) << r.stats.report;
  EXPECT_EQ((*reopened)->NextLsn(), 4u);
}

}  // namespace
}  // namespace trainwatch::storage::wal

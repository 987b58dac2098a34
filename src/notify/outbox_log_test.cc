// OutboxLog on its own: appends, acks, replay, compaction, and a full or failing disk through the
// fault-injecting file system.
#include "notify/outbox_log.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <tuple>

#include "common/testing/fault_injection_fs.h"
#include "common/testing/temp_dir.h"

namespace trainwatch::notify {
namespace {

class OutboxLogTest : public ::testing::Test {
 protected:
  // Opens the log in dir_, keeping the deliveries `keep` accepts (all by default); the kept ones
  // go to kept_.
  std::unique_ptr<OutboxLog> Open(
      FileSystem& fs = PosixFileSystem(), OutboxLogOptions options = {},
      OutboxLog::KeepFn keep = [](const OutboxRecord&) { return true; }) {
    kept_.clear();
    auto log = OutboxLog::Open(dir_.path(), fs, options, logger_, keep, &kept_);
    EXPECT_TRUE(log.ok()) << log.status().ToString();
    return log.ok() ? std::move(log).value() : nullptr;
  }

  // (id, receiver, notification) of each kept delivery.
  std::vector<std::tuple<uint64_t, std::string, std::string>> Kept() const {
    std::vector<std::tuple<uint64_t, std::string, std::string>> out;
    for (const OutboxRecord& r : kept_) out.emplace_back(r.id, r.receiver, r.notification_json);
    return out;
  }

  // The names of the files in dir_.
  std::vector<std::string> Files() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(dir_.path()))
      out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }

  // Whether every segment in dir_ decodes to its end (no torn tail, no bad magic).
  void ExpectSegmentsIntact() const {
    for (const std::string& name : Files()) {
      uint64_t number = 0;
      ASSERT_TRUE(ParseOutboxSegmentName(name, &number)) << name;
      auto contents = PosixFileSystem().ReadFile(dir_.Join(name));
      ASSERT_TRUE(contents.ok());
      auto decoded = DecodeOutboxSegment(*contents);
      ASSERT_TRUE(decoded.ok()) << name << ": " << decoded.status().ToString();
      EXPECT_EQ(decoded->stopped_because, "") << name;
    }
  }

  test::TempDir dir_;
  Logger logger_{LogLevel::kError};
  std::vector<OutboxRecord> kept_;
};

TEST_F(OutboxLogTest, ReplayKeepsTheDeliveriesNotAcked) {
  {
    auto log = Open();
    auto first = log->AppendDeliveries(100, {"a", "b"}, "{\"n\":1}");
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    EXPECT_EQ(*first, (std::vector<uint64_t>{1, 2}));
    auto second = log->AppendDeliveries(101, {"a"}, "{\"n\":2}");
    ASSERT_TRUE(second.ok());
    EXPECT_EQ(*second, std::vector<uint64_t>{3});
    EXPECT_EQ(log->pending(), 3u);
    EXPECT_TRUE(log->Ack(1, AckOutcome::kDelivered));
    EXPECT_FALSE(log->Ack(1, AckOutcome::kDelivered));  // done already
    EXPECT_FALSE(log->Ack(99, AckOutcome::kDropped));   // never appended
    EXPECT_EQ(log->pending(), 2u);
    EXPECT_FALSE(log->IsPending(1));
    EXPECT_TRUE(log->IsPending(2));
  }
  auto log = Open();
  using Rows = std::vector<std::tuple<uint64_t, std::string, std::string>>;
  EXPECT_EQ(Kept(), (Rows{{2, "b", "{\"n\":1}"}, {3, "a", "{\"n\":2}"}}));
  EXPECT_EQ(kept_[0].enqueued_at, 100);
  EXPECT_EQ(log->pending(), 2u);
  auto next = log->AppendDeliveries(102, {"a"}, "{}");  // ids are never reused
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(*next, std::vector<uint64_t>{4});
  EXPECT_EQ(Files(), std::vector<std::string>{OutboxSegmentName(2)});  // a fresh one per Open
}

TEST_F(OutboxLogTest, DeliveriesNotKeptAreForgotten) {
  {
    auto log = Open();
    ASSERT_TRUE(log->AppendDeliveries(100, {"a", "gone"}, "{}").ok());
  }
  Open(PosixFileSystem(), {}, [](const OutboxRecord& r) { return r.receiver != "gone"; });
  EXPECT_EQ(kept_.size(), 1u);
  Open();
  ASSERT_EQ(kept_.size(), 1u);
  EXPECT_EQ(kept_[0].receiver, "a");
}

TEST_F(OutboxLogTest, CompactionKeepsOneBoundedSegment) {
  auto log = Open(PosixFileSystem(), OutboxLogOptions{1024});
  const uint64_t first_segment = log->active_segment();
  const std::string body(100, 'x');
  for (int i = 0; i < 100; ++i) {
    auto ids = log->AppendDeliveries(100, {"a"}, body);
    ASSERT_TRUE(ids.ok());
    if (i % 10 != 0) log->Ack(ids->front(), AckOutcome::kDelivered);  // one in ten stays
  }
  EXPECT_GT(log->active_segment(), first_segment + 2);
  std::vector<std::string> files = Files();
  ASSERT_EQ(files.size(), 1u);
  // 10 pending deliveries of ~140 bytes: the segment holds them and at most as much again (or
  // segment_bytes), and one more record.
  EXPECT_LT(std::filesystem::file_size(dir_.Join(files[0])), 2 * 10 * 160u + 200u);
  log.reset();
  Open();
  EXPECT_EQ(kept_.size(), 10u);
}

TEST_F(OutboxLogTest, AppendAfterCloseIsUnavailable) {
  auto log = Open();
  ASSERT_TRUE(log->Close().ok());
  EXPECT_EQ(log->AppendDeliveries(100, {"a"}, "{}").status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(log->Close().ok());  // idempotent
}

// A full disk (ENOSPC, the append half written) or EIO: the append is refused with the disk's
// error and nothing becomes pending; what was pending stays; acks made meanwhile still count; the
// next append once the disk takes writes again succeeds by itself (in a fresh segment), and a
// reopen finds exactly the accepted deliveries, with every segment intact.
TEST_F(OutboxLogTest, DiskErrorRefusesTheAppendAndWritingResumesAfterIt) {
  using Failed = test::FaultInjectionFileSystem::FailedAppend;
  for (auto [injected, failed] :
       {std::pair{Status::ResourceExhausted("injected ENOSPC"), Failed::kHalfWritten},
        std::pair{Status::IoError("injected EIO"), Failed::kNothingWritten}}) {
    SCOPED_TRACE(injected.ToString());
    for (const auto& e : std::filesystem::directory_iterator(dir_.path()))
      std::filesystem::remove_all(e.path());
    test::FaultInjectionFileSystem fs(PosixFileSystem());
    {
      auto log = Open(fs);
      auto kept = log->AppendDeliveries(100, {"a"}, "{\"n\":1}");
      auto acked = log->AppendDeliveries(100, {"a"}, "{\"n\":2}");
      ASSERT_TRUE(kept.ok() && acked.ok());
      const uint64_t segment = log->active_segment();

      fs.SetWriteError(injected, failed);
      auto refused = log->AppendDeliveries(101, {"a", "b"}, "{\"n\":3}");
      EXPECT_EQ(refused.status().code(), injected.code()) << refused.status().ToString();
      EXPECT_EQ(log->pending(), 2u);
      EXPECT_TRUE(log->Ack(acked->front(), AckOutcome::kDelivered));  // its record is lost
      auto again = log->AppendDeliveries(101, {"a"}, "{\"n\":3}");    // still full: refused
      EXPECT_EQ(again.status().code(), injected.code()) << again.status().ToString();

      fs.SetWriteError(Status::Ok());
      auto resumed = log->AppendDeliveries(102, {"a"}, "{\"n\":4}");
      ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
      EXPECT_GT(log->active_segment(), segment);  // the segment with the failed write is retired
      EXPECT_EQ(log->pending(), 2u);
    }
    ExpectSegmentsIntact();
    Open();
    std::vector<std::string> bodies;
    for (const OutboxRecord& r : kept_) bodies.push_back(r.notification_json);
    EXPECT_EQ(bodies, (std::vector<std::string>{"{\"n\":1}", "{\"n\":4}"}));
    EXPECT_EQ(Files().size(), 1u);
  }
}

// A power cut while the disk is full: what was accepted before survives, the refused append's
// partial bytes are cut off.
TEST_F(OutboxLogTest, PowerCutAfterARefusedAppendKeepsWhatWasAccepted) {
  test::FaultInjectionFileSystem fs(PosixFileSystem());
  {
    auto log = Open(fs);
    ASSERT_TRUE(log->AppendDeliveries(100, {"a"}, "{\"n\":1}").ok());
    fs.SetWriteError(Status::ResourceExhausted("injected ENOSPC"),
                     test::FaultInjectionFileSystem::FailedAppend::kHalfWritten);
    EXPECT_FALSE(log->AppendDeliveries(101, {"a"}, "{\"n\":2}").ok());
    ASSERT_TRUE(fs.Crash().ok());
  }
  fs.SetWriteError(Status::Ok());
  fs.Restart();
  Open(fs);
  ASSERT_EQ(kept_.size(), 1u);
  EXPECT_EQ(kept_[0].notification_json, "{\"n\":1}");
  ExpectSegmentsIntact();
}

}  // namespace
}  // namespace trainwatch::notify

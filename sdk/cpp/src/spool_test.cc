#include "spool.h"

#include <random>

#include <gtest/gtest.h>

#include "common/testing/fault_injection_fs.h"
#include "common/testing/temp_dir.h"

namespace trainwatch::sdk {
namespace {

// 200 incompressible bytes, a function of the sequence.
SpooledBatch Batch(uint64_t seq, uint32_t points = 10) {
  std::mt19937_64 rng(seq);
  std::string bytes(200, '\0');
  for (char& c : bytes) c = static_cast<char>(rng());
  return SpooledBatch{seq, points, bytes};
}

class SpoolTest : public ::testing::Test {
 protected:
  std::unique_ptr<Spool> Open(SpoolOptions options = {}) {
    auto spool = Spool::Open(PosixFileSystem(), dir_.Join("w"), options);
    EXPECT_TRUE(spool.ok()) << spool.status().ToString();
    return std::move(spool).value();
  }
  test::TempDir dir_;
};

TEST_F(SpoolTest, LoadsSegmentsOldestFirstAndReleasesThem) {
  SpoolOptions options;
  options.segment_bytes = 500;  // about two batches per segment
  auto spool = Open(options);
  uint64_t dropped = 0;
  for (uint64_t s = 1; s <= 5; ++s) ASSERT_TRUE(spool->Append(Batch(s), &dropped).ok());
  EXPECT_EQ(dropped, 0u);
  EXPECT_GE(spool->segment_count(), 2u);
  std::vector<uint64_t> seen;
  while (spool->HasUnloaded()) {
    auto loaded = spool->LoadOldest();
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    for (const SpooledBatch& b : loaded->second) {
      seen.push_back(b.sequence);
      EXPECT_EQ(b.bytes, Batch(b.sequence).bytes);
      EXPECT_EQ(b.points, 10u);
    }
    ASSERT_TRUE(spool->Release(loaded->first).ok());
  }
  EXPECT_EQ(seen, (std::vector<uint64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(spool->segment_count(), 0u);
  EXPECT_EQ(spool->bytes(), 0u);
  ASSERT_TRUE(spool->Close().ok());
  EXPECT_FALSE(PosixFileSystem().Exists(dir_.Join("w"))) << "an empty spool removes its directory";
}

TEST_F(SpoolTest, ReopenFindsWhatWasLeftAndATornTailEndsASegment) {
  {
    auto spool = Open();
    uint64_t dropped = 0;
    for (uint64_t s = 1; s <= 3; ++s) ASSERT_TRUE(spool->Append(Batch(s), &dropped).ok());
    ASSERT_TRUE(spool->Close().ok());
  }
  // Cut the last record in half (a crash while appending).
  auto names = PosixFileSystem().ListDir(dir_.Join("w"));
  ASSERT_TRUE(names.ok());
  ASSERT_EQ(names->size(), 1u);
  std::string path = dir_.Join("w") + "/" + names->front();
  auto size = PosixFileSystem().FileSize(path);
  ASSERT_TRUE(PosixFileSystem().Truncate(path, *size - 30).ok());

  auto spool = Open();
  EXPECT_TRUE(spool->HasUnloaded());
  auto loaded = spool->LoadOldest();
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->second.size(), 2u);
  EXPECT_EQ(loaded->second[1].sequence, 2u);
}

TEST_F(SpoolTest, FullSpoolDropsOldestSegmentsAndCountsTheirPoints) {
  SpoolOptions options;
  options.segment_bytes = 300;  // one batch per segment
  options.max_bytes = 1200;
  auto spool = Open(options);
  uint64_t dropped = 0;
  for (uint64_t s = 1; s <= 10; ++s) ASSERT_TRUE(spool->Append(Batch(s, 7), &dropped).ok());
  EXPECT_LE(spool->bytes(), options.max_bytes);
  EXPECT_GT(dropped, 0u);
  EXPECT_EQ(dropped % 7, 0u);
  uint64_t kept = 0, first = 0;
  while (spool->HasUnloaded()) {
    auto loaded = spool->LoadOldest();
    ASSERT_TRUE(loaded.ok());
    if (first == 0) first = loaded->second.front().sequence;
    kept += loaded->second.size();
  }
  EXPECT_EQ(kept * 7 + dropped, 70u) << "every point is either kept or counted as dropped";
  EXPECT_GT(first, 1u) << "the oldest went first";
}

TEST_F(SpoolTest, FullSpoolRefusesWhenNotAllowedToDrop) {
  SpoolOptions options;
  options.max_bytes = 600;
  options.drop_oldest_when_full = false;
  auto spool = Open(options);
  uint64_t dropped = 0;
  Status s;
  int appended = 0;
  while ((s = spool->Append(Batch(appended + 1), &dropped)).ok()) ++appended;
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_GE(appended, 1);
  EXPECT_EQ(dropped, 0u);
}

TEST_F(SpoolTest, AppendSegmentSortsBeforeLaterSegments) {
  auto spool = Open();
  uint64_t dropped = 0;
  ASSERT_TRUE(spool->Append(Batch(10), &dropped).ok());
  ASSERT_TRUE(spool->AppendSegment({Batch(3), Batch(4)}).ok());
  auto first = spool->LoadOldest();
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->second.front().sequence, 3u);
  auto second = spool->LoadOldest();
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->second.front().sequence, 10u);
}

// A full disk (ENOSPC) or EIO under the spool: the append is refused with the disk's error, nothing
// already spooled is damaged, and the same batch appends once the disk takes writes again.
TEST_F(SpoolTest, DiskErrorRefusesTheAppendAndAppendingResumesAfterIt) {
  using Failed = test::FaultInjectionFileSystem::FailedAppend;
  for (auto [injected, failed] :
       {std::pair{Status::ResourceExhausted("injected ENOSPC"), Failed::kHalfWritten},
        std::pair{Status::IoError("injected EIO"), Failed::kNothingWritten}}) {
    SCOPED_TRACE(injected.ToString());
    test::TempDir dir;
    test::FaultInjectionFileSystem fault(PosixFileSystem());
    auto opened = Spool::Open(fault, dir.Join("w"), SpoolOptions{});
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    Spool& spool = **opened;
    uint64_t dropped = 0;
    ASSERT_TRUE(spool.Append(Batch(1), &dropped).ok());
    ASSERT_TRUE(spool.Append(Batch(2), &dropped).ok());
    fault.SetWriteError(injected, failed);
    Status refused = spool.Append(Batch(3), &dropped);
    EXPECT_EQ(refused.code(), injected.code()) << refused.ToString();
    fault.SetWriteError(Status::Ok());
    Status resumed = spool.Append(Batch(3), &dropped);
    ASSERT_TRUE(resumed.ok()) << resumed.ToString();
    ASSERT_TRUE(spool.Close().ok());
    opened->reset();

    auto reopened = Spool::Open(PosixFileSystem(), dir.Join("w"), SpoolOptions{});
    ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
    std::vector<uint64_t> seen;
    while ((*reopened)->HasUnloaded()) {
      auto loaded = (*reopened)->LoadOldest();
      ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
      for (const SpooledBatch& b : loaded->second) {
        seen.push_back(b.sequence);
        EXPECT_EQ(b.bytes, Batch(b.sequence).bytes);
      }
    }
    EXPECT_EQ(seen, (std::vector<uint64_t>{1, 2, 3}));
  }
}

TEST(DecodeSegmentTest, RejectsForeignFilesAndStopsAtCorruption) {
  EXPECT_FALSE(DecodeSegment("hello").ok());
  auto empty = DecodeSegment("TWSPOOL1");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

}  // namespace
}  // namespace trainwatch::sdk

#include "outbox.h"

#include <gtest/gtest.h>

#include "common/testing/temp_dir.h"

namespace trainwatch::sdk {
namespace {

OutboxBatch Batch(uint64_t seq) {
  return OutboxBatch{seq, 1, std::make_shared<const std::string>("batch " + std::to_string(seq))};
}

class OutboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SpoolOptions options;
    options.segment_bytes = 64;
    auto spool = Spool::Open(PosixFileSystem(), dir_.Join("w"), options);
    ASSERT_TRUE(spool.ok());
    spool_ = std::move(spool).value();
  }
  void Push(Outbox& box, uint64_t seq, bool to_spool, bool expect_spooled) {
    bool spooled = false;
    uint64_t dropped = 0;
    ASSERT_TRUE(box.Push(Batch(seq), to_spool, &spooled, &dropped).ok());
    EXPECT_EQ(spooled, expect_spooled) << "batch " << seq;
  }
  std::vector<uint64_t> SendAll(Outbox& box) {
    std::vector<uint64_t> order;
    Status error;
    while (auto b = box.NextUnsent(&error)) order.push_back(b->sequence);
    EXPECT_TRUE(error.ok()) << error.ToString();
    return order;
  }
  test::TempDir dir_;
  std::unique_ptr<Spool> spool_;
};

TEST_F(OutboxTest, SendsInSequenceOrderAcrossMemoryAndSpool) {
  Outbox box(spool_.get(), 1 << 20);
  Push(box, 1, false, false);
  Push(box, 2, false, false);
  Push(box, 3, true, true);    // disconnected: spooled
  Push(box, 4, false, true);   // the spool holds older batches: spooled too
  EXPECT_EQ(SendAll(box), (std::vector<uint64_t>{1, 2, 3, 4}));
  for (uint64_t s = 1; s <= 4; ++s) EXPECT_TRUE(box.Ack(s));
  EXPECT_TRUE(box.Empty());
  EXPECT_EQ(spool_->segment_count(), 0u) << "acknowledged segments are deleted";
  Push(box, 5, false, false);  // the spool is empty again: memory
}

TEST_F(OutboxTest, AcksMustComeInOrderAndRewindResendsTheUnacknowledged) {
  Outbox box(spool_.get(), 1 << 20);
  for (uint64_t s = 1; s <= 3; ++s) Push(box, s, false, false);
  EXPECT_EQ(SendAll(box), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_FALSE(box.Ack(2));
  EXPECT_TRUE(box.Ack(1));
  box.Rewind();
  EXPECT_EQ(SendAll(box), (std::vector<uint64_t>{2, 3}));
}

TEST_F(OutboxTest, MemoryBudgetOverflowsIntoTheSpool) {
  Outbox box(spool_.get(), 20);  // room for two batches
  Push(box, 1, false, false);
  Push(box, 2, false, false);
  Push(box, 3, false, true);
  EXPECT_EQ(box.in_memory(), 2u);
  EXPECT_EQ(SendAll(box), (std::vector<uint64_t>{1, 2, 3}));
}

TEST_F(OutboxTest, SpillMemoryKeepsEverythingUnacknowledgedOnDisk) {
  Outbox box(spool_.get(), 1 << 20);
  Push(box, 1, false, false);
  Push(box, 2, false, false);
  Push(box, 3, true, true);
  EXPECT_EQ(SendAll(box).size(), 3u);
  EXPECT_TRUE(box.Ack(1));
  ASSERT_TRUE(box.SpillMemory().ok());
  EXPECT_EQ(box.in_memory(), 0u);
  std::vector<uint64_t> on_disk;
  while (spool_->HasUnloaded()) {
    auto loaded = spool_->LoadOldest();
    ASSERT_TRUE(loaded.ok());
    for (const auto& b : loaded->second) on_disk.push_back(b.sequence);
  }
  EXPECT_EQ(on_disk, (std::vector<uint64_t>{2, 3}));
}

TEST(OutboxWithoutSpoolTest, RefusesBeyondTheMemoryBudget) {
  Outbox box(nullptr, 20);
  bool spooled;
  uint64_t dropped = 0;
  EXPECT_TRUE(box.Push(Batch(1), true, &spooled, &dropped).ok());
  EXPECT_FALSE(spooled);
  EXPECT_TRUE(box.Push(Batch(2), false, &spooled, &dropped).ok());
  EXPECT_EQ(box.Push(Batch(3), false, &spooled, &dropped).code(), StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace trainwatch::sdk

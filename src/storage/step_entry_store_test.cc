// StepEntryStore, the one store path of every per-step kind, against a real RocksDB database:
// replacing, scanning, ageing out and run deletion, and the image kind's blob references.
#include "storage/step_entry_store.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "common/sha256.h"
#include "common/testing/temp_dir.h"
#include "storage/chunk_store.h"
#include "storage/media.h"

namespace trainwatch::storage {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

class StepEntryStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = ChunkStore::Open(dir_.Join("store"));
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }

  // Puts a text, passing the summary the previous put returned (as the engine does).
  void PutText(const SeriesKey& name, int64_t step, double time, const std::string& value) {
    TextEntry e;
    e.time = time;
    e.value = value;
    BlobChange change;
    auto summary =
        store_->entries(StepEntryType::kText)
            .Put(name, summaries_[name.metric], step, 0, time, EncodeTextEntry(e), {}, &change);
    ASSERT_TRUE(summary.ok()) << summary.status().ToString();
    summaries_[name.metric] = *summary;
  }

  void PutImage(const SeriesKey& name, int64_t step, uint32_t index, const std::string& bytes) {
    ImageEntry e;
    e.time = 1;
    e.sha256 = Sha256(bytes);
    e.size = bytes.size();
    auto summary = store_->entries(StepEntryType::kImage)
                       .Put(name, summaries_[name.metric], step, index, e.time, EncodeImageEntry(e),
                            bytes, &blobs_);
    ASSERT_TRUE(summary.ok()) << summary.status().ToString();
    summaries_[name.metric] = *summary;
  }

  std::vector<std::pair<int64_t, std::string>> Texts(const SeriesKey& name) {
    std::vector<std::pair<int64_t, std::string>> out;
    EXPECT_TRUE(store_->entries(StepEntryType::kText)
                    .Scan(name, 0, std::numeric_limits<int64_t>::max(),
                          [&](int64_t step, uint32_t, std::string_view value) {
                            TextEntry e;
                            EXPECT_TRUE(DecodeTextEntry(value, &e));
                            out.emplace_back(step, e.value);
                            return true;
                          })
                    .ok());
    return out;
  }

  test::TempDir dir_;
  std::unique_ptr<ChunkStore> store_;
  std::map<std::string, StepEntrySummary> summaries_;
  BlobChange blobs_;  // the blob totals, as the engine keeps them
};

TEST_F(StepEntryStoreTest, ReplacingAnEntryCountsItOnce) {
  const SeriesKey log{"p", "r", "log"};
  PutText(log, 5, 20, "a");
  PutText(log, 5, 10, "b");  // replaces: one entry, the lower time kept as the bound
  PutText(log, 7, 30, "c");
  EXPECT_EQ(Texts(log), (std::vector<std::pair<int64_t, std::string>>{{5, "b"}, {7, "c"}}));
  const StepEntrySummary& s = summaries_["log"];
  EXPECT_EQ(s.count, 2u);
  EXPECT_EQ(s.first_step, 5);
  EXPECT_EQ(s.last_step, 7);
  EXPECT_EQ(s.min_time, 10);
  std::vector<std::pair<std::string, uint64_t>> stored;
  ASSERT_TRUE(store_->entries(StepEntryType::kText)
                  .ForEachSummary([&](SeriesKey name, StepEntrySummary summary) {
                    stored.emplace_back(name.metric, summary.count);
                    return Status::Ok();
                  })
                  .ok());
  EXPECT_EQ(stored, (std::vector<std::pair<std::string, uint64_t>>{{"log", 2}}));
}

TEST_F(StepEntryStoreTest, ScanIsByStepThenIndexWithinTheRange) {
  const SeriesKey img{"p", "r", "img"};
  PutImage(img, 7, 0, "x");
  PutImage(img, 3, 1, "y");
  PutImage(img, 3, 0, "z");
  std::vector<std::pair<int64_t, uint32_t>> seen;
  auto scan = [&](int64_t from, int64_t to, size_t stop_after) {
    seen.clear();
    return store_->entries(StepEntryType::kImage)
        .Scan(img, from, to, [&](int64_t step, uint32_t index, std::string_view) {
          seen.emplace_back(step, index);
          return seen.size() < stop_after;
        });
  };
  ASSERT_TRUE(scan(0, 100, 10).ok());
  EXPECT_EQ(seen, (std::vector<std::pair<int64_t, uint32_t>>{{3, 0}, {3, 1}, {7, 0}}));
  ASSERT_TRUE(scan(3, 3, 10).ok());
  EXPECT_EQ(seen, (std::vector<std::pair<int64_t, uint32_t>>{{3, 0}, {3, 1}}));
  ASSERT_TRUE(scan(0, 100, 1).ok());  // stops when told to
  EXPECT_EQ(seen.size(), 1u);
}

TEST_F(StepEntryStoreTest, DeleteOlderThanRewritesTheSummaryExactly) {
  const SeriesKey log{"p", "r", "log"};
  for (int step = 1; step <= 4; ++step) PutText(log, step, 10.0 * step, "t");
  StepEntrySummary kept;
  BlobChange change;
  auto deleted = store_->entries(StepEntryType::kText).DeleteOlderThan(log, 25, &kept, &change);
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(*deleted, 2u);
  EXPECT_EQ(kept.count, 2u);
  EXPECT_EQ(kept.first_step, 3);
  EXPECT_EQ(kept.last_step, 4);
  EXPECT_EQ(kept.min_time, 30);
  EXPECT_EQ(Texts(log).size(), 2u);
  deleted = store_->entries(StepEntryType::kText).DeleteOlderThan(log, kInfinity, &kept, &change);
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(*deleted, 2u);
  EXPECT_EQ(kept.count, 0u);
  size_t summaries = 0;
  ASSERT_TRUE(store_->entries(StepEntryType::kText)
                  .ForEachSummary([&](SeriesKey, StepEntrySummary) {
                    ++summaries;
                    return Status::Ok();
                  })
                  .ok());
  EXPECT_EQ(summaries, 0u);  // the last entry took the summary with it
}

TEST_F(StepEntryStoreTest, ImageEntriesKeepTheirBlobsReferencesExact) {
  const SeriesKey a{"p", "r", "a"}, b{"p", "r", "b"};
  PutImage(a, 1, 0, "same");
  PutImage(b, 1, 0, "same");  // a second reference, no second blob
  EXPECT_EQ(blobs_.blobs, 1);
  EXPECT_EQ(blobs_.bytes, 4);
  PutImage(a, 1, 0, "other");  // replaced: "same" keeps b's reference
  EXPECT_EQ(blobs_.blobs, 2);
  EXPECT_TRUE(*store_->blobs().Has(Sha256("same")));
  StepEntrySummary kept;
  ASSERT_TRUE(
      store_->entries(StepEntryType::kImage).DeleteOlderThan(b, kInfinity, &kept, &blobs_).ok());
  EXPECT_FALSE(*store_->blobs().Has(Sha256("same")));  // its last reference went
  EXPECT_EQ(store_->blobs().Get(Sha256("same")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(*store_->blobs().Get(Sha256("other")), "other");
  auto counted = store_->blobs().Count();
  ASSERT_TRUE(counted.ok());
  EXPECT_EQ(counted->blobs, blobs_.blobs);
  EXPECT_EQ(counted->bytes, blobs_.bytes);
  EXPECT_EQ(blobs_.blobs, 1);
}

TEST_F(StepEntryStoreTest, RunDeletionTakesOnlyThatRunsEntriesOfKindsWithoutReferences) {
  const SeriesKey r{"p", "r", "log"}, r2{"p", "r2", "log"};
  PutText(r, 1, 1, "gone");
  summaries_.clear();
  PutText(r2, 1, 1, "kept");  // "r2" sorts after the end of run "r"'s range
  summaries_.clear();
  PutImage({"p", "r", "img"}, 1, 0, "bytes");
  ASSERT_TRUE(store_->DeleteRun("p", "r").ok());
  EXPECT_TRUE(Texts(r).empty());
  EXPECT_EQ(Texts(r2).size(), 1u);
  size_t images = 0;
  ASSERT_TRUE(store_->entries(StepEntryType::kImage)
                  .Scan({"p", "r", "img"}, 0, 10,
                        [&](int64_t, uint32_t, std::string_view) { return ++images > 0; })
                  .ok());
  EXPECT_EQ(images, 1u);  // images go name by name first (they release their blobs)
}

}  // namespace
}  // namespace trainwatch::storage

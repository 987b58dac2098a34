#include "cluster/message_split.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace trainwatch::cluster {
namespace {

constexpr size_t kLimit = 64 * 1024;

v1::RunBatch Batch(const std::string& run, int rows, int images, size_t image_bytes) {
  v1::RunBatch b;
  b.set_project("p");
  b.set_run(run);
  b.mutable_rank()->set_rank(3);
  v1::MetricColumn* dense = b.add_metrics();
  dense->set_name("loss");
  v1::MetricColumn* sparse = b.add_metrics();
  sparse->set_name("eval/acc");
  for (int i = 0; i < rows; ++i) {
    b.add_steps(1000 + i);
    b.add_times(1767225600.0 + i);
    dense->add_values(0.5 + i * 1e-3);
    if (i % 7 == 0) {
      sparse->add_rows(static_cast<uint32_t>(i));
      sparse->add_values(i);
    }
  }
  for (int k = 0; k < images; ++k) {
    v1::Image* image = b.add_images();
    image->set_name("samples/" + std::to_string(k));
    image->set_step(1000 + k);
    image->set_data(std::string(image_bytes, static_cast<char>('a' + k)));
  }
  b.mutable_metadata()->set_status("finished");
  b.mutable_heartbeat()->set_interval_seconds(5);
  return b;
}

// What a run's pieces say, put back together: its rows (step -> metric -> value), its images in
// order, and the metadata of the last piece that has one.
struct Whole {
  std::map<int64_t, std::map<std::string, double>> rows;
  std::vector<std::string> images;
  int metadata_pieces = 0;
  bool metadata_last = false;
};

Whole Join(const std::vector<v1::WriteRequest>& requests) {
  Whole w;
  size_t piece = 0, total = 0;
  for (const auto& r : requests) total += r.runs_size();
  for (const auto& r : requests) {
    for (const v1::RunBatch& b : r.runs()) {
      ++piece;
      for (const v1::MetricColumn& c : b.metrics()) {
        for (int k = 0; k < c.values_size(); ++k) {
          const int row = c.rows_size() == 0 ? k : static_cast<int>(c.rows(k));
          w.rows[b.steps(row)][c.name()] = c.values(k);
        }
      }
      for (const v1::Image& image : b.images()) w.images.push_back(image.name());
      if (b.has_metadata()) {
        ++w.metadata_pieces;
        w.metadata_last = piece == total && b.metadata().status() == "finished" &&
                          b.heartbeat().interval_seconds() == 5;
      }
      EXPECT_EQ(b.rank().rank(), 3u);
    }
  }
  return w;
}

Whole JoinOriginal(const v1::WriteRequest& request) { return Join({request}); }

TEST(MessageSplitTest, ARequestThatFitsIsSentWhole) {
  v1::WriteRequest request;
  *request.add_runs() = Batch("r", 10, 1, 100);
  auto split = SplitForMessages(request, kLimit);
  ASSERT_TRUE(split.ok()) << split.status().ToString();
  ASSERT_EQ(split->size(), 1u);
  EXPECT_EQ((*split)[0].SerializeAsString(), request.SerializeAsString());
}

TEST(MessageSplitTest, ALargeBatchBecomesPiecesUnderTheLimitThatAddUpToIt) {
  v1::WriteRequest request;
  *request.add_runs() = Batch("small-1", 5, 0, 0);
  *request.add_runs() = Batch("big", 20000, 6, 20 * 1024);
  *request.add_runs() = Batch("small-2", 5, 0, 0);
  ASSERT_GT(request.ByteSizeLong(), 4 * kLimit);
  auto split = SplitForMessages(request, kLimit);
  ASSERT_TRUE(split.ok()) << split.status().ToString();
  EXPECT_GT(split->size(), 4u);
  for (const auto& r : *split) EXPECT_LE(r.ByteSizeLong(), kLimit);

  // Per run, in order: the same rows, images and metadata, the metadata in the run's last piece.
  std::map<std::string, std::vector<v1::WriteRequest>> by_run;
  std::vector<std::string> order;
  for (const auto& r : *split) {
    for (const v1::RunBatch& b : r.runs()) {
      v1::WriteRequest one;
      *one.add_runs() = b;
      if (by_run[b.run()].empty()) order.push_back(b.run());
      by_run[b.run()].push_back(std::move(one));
    }
  }
  EXPECT_EQ(order, (std::vector<std::string>{"small-1", "big", "small-2"}));
  for (const v1::RunBatch& original : request.runs()) {
    v1::WriteRequest alone;
    *alone.add_runs() = original;
    Whole want = JoinOriginal(alone), got = Join(by_run[original.run()]);
    EXPECT_EQ(got.rows, want.rows) << original.run();
    EXPECT_EQ(got.images, want.images) << original.run();
    EXPECT_EQ(got.metadata_pieces, 1) << original.run();
    EXPECT_TRUE(got.metadata_last) << original.run();
  }
  EXPECT_EQ(Join(by_run["big"]).rows.size(), 20000u);

  // The same request is always cut the same way (a resent batch's pieces are duplicates).
  auto again = SplitForMessages(request, kLimit);
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->size(), split->size());
  for (size_t i = 0; i < split->size(); ++i) {
    EXPECT_EQ((*again)[i].SerializeAsString(), (*split)[i].SerializeAsString()) << i;
  }
}

TEST(MessageSplitTest, AnItemLargerThanAMessageIsRefusedByName) {
  v1::WriteRequest request;
  *request.add_runs() = Batch("r", 10, 2, kLimit + 1);
  auto split = SplitForMessages(request, kLimit);
  ASSERT_EQ(split.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(split.status().message().find("image samples/0 at step 1000 of run r"),
            std::string::npos)
      << split.status().ToString();
  EXPECT_NE(split.status().message().find("max_payload"), std::string::npos);
}

}  // namespace
}  // namespace trainwatch::cluster

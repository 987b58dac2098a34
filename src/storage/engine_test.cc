#include "storage/engine.h"

#include <cmath>
#include <cstring>
#include <future>
#include <limits>
#include <random>
#include <thread>
#include <tuple>

#include <gtest/gtest.h>

#include "common/testing/temp_dir.h"
#include "storage/engine_test_util.h"

namespace trainwatch::storage {
namespace {

uint64_t Bits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, 8);
  return b;
}

// An engine over a real WAL and RocksDB in a temp dir, reopenable.
class EngineTest : public ::testing::Test {
 protected:
  void Open(size_t chunk_points = 4) {
    EngineOptions options;
    options.chunk_points = chunk_points;
    Open(options);
  }

  void Open(const EngineOptions& options) {
    engine_.reset();
    auto engine = OpenTestEngine(dir_.path(), options, clock_, logger_, metrics_);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    engine_ = std::move(engine).value();
  }

  // Writes one run batch of (step, value) rows for one metric and waits for the ack.
  WriteOutcome Write(const std::vector<std::pair<int64_t, double>>& rows,
                     const std::string& metric = "loss", const std::string& writer = "",
                     uint64_t seq = 0) {
    v1::WriteRequest request;
    request.set_writer_id(writer);
    request.set_sequence(seq);
    v1::RunBatch* batch = request.add_runs();
    batch->set_project("p");
    batch->set_run("r");
    v1::MetricColumn* column = batch->add_metrics();
    column->set_name(metric);
    for (auto [step, value] : rows) {
      batch->add_steps(step);
      batch->add_times(1767225600.0 + step);
      column->add_values(value);
    }
    std::promise<WriteOutcome> done;
    engine_->Write(std::move(request), [&](const Status& s, const WriteOutcome& o) {
      EXPECT_TRUE(s.ok()) << s.ToString();
      done.set_value(o);
    });
    return done.get_future().get();
  }

  std::vector<Point> Read(const std::string& metric = "loss") {
    std::vector<Point> out;
    Status s = engine_->ReadSeries({"p", "r", metric}, {}, &out);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }

  static std::vector<std::pair<int64_t, double>> Steps(const std::vector<Point>& points) {
    std::vector<std::pair<int64_t, double>> out;
    for (const Point& p : points) out.emplace_back(p.step, p.value);
    return out;
  }

  test::TempDir dir_;
  ManualClock clock_;
  Logger logger_{LogLevel::kWarn};
  MetricsRegistry metrics_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(EngineTest, StoresAndReadsBackBitExactIncludingNonFinite) {
  Open();
  double payload_nan;
  uint64_t nan_bits = 0x7FF8DEADBEEF0001ull;
  std::memcpy(&payload_nan, &nan_bits, 8);
  std::vector<std::pair<int64_t, double>> rows = {{0, 0.5},
                                                  {1, payload_nan},
                                                  {2, std::numeric_limits<double>::infinity()},
                                                  {3, -std::numeric_limits<double>::infinity()},
                                                  {4, -0.0},
                                                  {5, 1e-310},
                                                  {6, 3.25}};
  WriteOutcome o = Write(rows);
  EXPECT_EQ(o.points_written, rows.size());
  for (int reopen = 0; reopen < 2; ++reopen) {
    std::vector<Point> got = Read();
    ASSERT_EQ(got.size(), rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      EXPECT_EQ(got[i].step, rows[i].first);
      EXPECT_EQ(Bits(got[i].value), Bits(rows[i].second)) << "step " << rows[i].first;
    }
    Open();  // the second pass reads sealed chunks from the store
  }
}

TEST_F(EngineTest, IdenticalRewriteIsANoOp) {
  Open();
  Write({{0, 1.0}, {1, 2.0}, {2, 3.0}});
  WriteOutcome o = Write({{1, 2.0}, {2, 3.0}});
  EXPECT_EQ(o.points_written, 0u);
  EXPECT_EQ(o.points_unchanged, 2u);
  EXPECT_EQ(o.rewinds, 0u);
  EXPECT_EQ(Read().size(), 3u);
}

TEST_F(EngineTest, ChangedValueStartsANewTimelineAndKeepsTheOldOne) {
  Open(/*chunk_points=*/4);
  std::vector<std::pair<int64_t, double>> first;
  for (int s = 0; s < 10; ++s) first.emplace_back(s, 100.0 + s);
  Write(first);  // seals chunks of 4: steps 0-9 are partly in the store
  WriteOutcome o = Write({{5, -5.0}, {6, -6.0}});
  EXPECT_EQ(o.rewinds, 1u);
  std::vector<std::pair<int64_t, double>> want = {{0, 100}, {1, 101}, {2, 102}, {3, 103},
                                                  {4, 104}, {5, -5},  {6, -6}};
  EXPECT_EQ(Steps(Read()), want);

  std::vector<SupersededPoint> hidden;
  ASSERT_TRUE(engine_->ReadSuperseded({"p", "r", "loss"}, &hidden).ok());
  std::vector<int64_t> hidden_steps;
  for (const auto& h : hidden) hidden_steps.push_back(h.point.step);
  EXPECT_EQ(hidden_steps, (std::vector<int64_t>{5, 6, 7, 8, 9}));
  for (const auto& h : hidden) EXPECT_EQ(h.gen, 0u) << "step " << h.point.step;

  auto metrics = engine_->ListMetrics("p", "r");
  ASSERT_EQ(metrics.size(), 1u);
  EXPECT_EQ(metrics[0].count, 7u);
  EXPECT_EQ(metrics[0].last_step, 6);
  EXPECT_EQ(metrics[0].timelines, 2u);
  EXPECT_EQ(metrics[0].latest.value, -6.0);

  Open(4);  // and the same after a restart
  EXPECT_EQ(Steps(Read()), want);
  auto after = engine_->ListMetrics("p", "r");
  EXPECT_EQ(after[0].count, 7u);
  EXPECT_EQ(after[0].latest.step, 6);
}

// Points hidden while still in memory keep the generation they belonged to, in memory and sealed.
TEST_F(EngineTest, SupersededPointsKeepTheirTimeline) {
  Open(/*chunk_points=*/100);
  Write({{0, 0}, {1, 1}, {2, 2}});
  Write({{1, -1}, {2, -2}});  // timeline 1 from step 1: hides 1 and 2 of timeline 0
  Write({{2, -20}});          // timeline 2 from step 2: hides 2 of timeline 1
  auto labels = [&] {
    std::vector<SupersededPoint> hidden;
    EXPECT_TRUE(engine_->ReadSuperseded({"p", "r", "loss"}, &hidden).ok());
    std::vector<std::tuple<int64_t, double, uint32_t>> out;
    for (const auto& h : hidden) out.emplace_back(h.point.step, h.point.value, h.gen);
    return out;
  };
  std::vector<std::tuple<int64_t, double, uint32_t>> want = {{1, 1, 0}, {2, 2, 0}, {2, -2, 1}};
  EXPECT_EQ(labels(), want);
  EXPECT_EQ(Steps(Read()), (std::vector<std::pair<int64_t, double>>{{0, 0}, {1, -1}, {2, -20}}));
  Open(100);  // the shutdown checkpoint sealed them
  EXPECT_EQ(labels(), want);
  EXPECT_EQ(Steps(Read()), (std::vector<std::pair<int64_t, double>>{{0, 0}, {1, -1}, {2, -20}}));
}

TEST_F(EngineTest, OutOfOrderPointsFillEmptySteps) {
  Open(/*chunk_points=*/4);
  Write({{0, 0}, {2, 2}, {4, 4}, {6, 6}, {8, 8}, {10, 10}});
  WriteOutcome o = Write({{5, 5}, {1, 1}, {9, 9}});
  EXPECT_EQ(o.rewinds, 0u);
  EXPECT_EQ(o.points_written, 3u);
  std::vector<std::pair<int64_t, double>> want = {{0, 0}, {1, 1}, {2, 2}, {4, 4},  {5, 5},
                                                  {6, 6}, {8, 8}, {9, 9}, {10, 10}};
  EXPECT_EQ(Steps(Read()), want);
  Open(4);
  EXPECT_EQ(Steps(Read()), want);
}

// Pages of every size, over sealed chunks, the head and out-of-order fill-ins that make chunks
// overlap, add up to the whole read, in order, each page no larger than asked.
TEST_F(EngineTest, PagedReadsAddUpToTheWholeSeries) {
  Open(/*chunk_points=*/4);
  std::vector<std::pair<int64_t, double>> rows;
  for (int64_t s = 0; s < 40; s += 2) rows.emplace_back(s, static_cast<double>(s));
  Write(rows);
  Write({{5, 5},
         {1, 1},
         {33, 33},
         {17, 17},
         {41, 41}});  // fill-ins across sealed chunks, and the head
  const std::vector<Point> whole = Read();
  ASSERT_EQ(whole.size(), 25u);
  for (size_t page_size = 1; page_size <= whole.size() + 1; ++page_size) {
    std::vector<Point> pages;
    SeriesReadOptions options;
    options.max_points = page_size;
    for (int reads = 0;; ++reads) {
      ASSERT_LT(reads, 100) << "page size " << page_size;
      std::vector<Point> page;
      std::optional<int64_t> next;
      ASSERT_TRUE(engine_->ReadSeries({"p", "r", "loss"}, options, &page, &next).ok());
      EXPECT_LE(page.size(), page_size);
      pages.insert(pages.end(), page.begin(), page.end());
      if (!next) break;
      EXPECT_GT(*next, page.empty() ? options.from_step : page.back().step);
      options.from_step = *next;
    }
    EXPECT_EQ(Steps(pages), Steps(whole)) << "page size " << page_size;
  }
  // A bounded range pages within its bounds.
  SeriesReadOptions options;
  options.from_step = 3;
  options.to_step = 20;
  options.max_points = 4;
  std::vector<Point> page;
  std::optional<int64_t> next;
  ASSERT_TRUE(engine_->ReadSeries({"p", "r", "loss"}, options, &page, &next).ok());
  std::vector<std::pair<int64_t, double>> want = {{4, 4}, {5, 5}, {6, 6}, {8, 8}};
  EXPECT_EQ(Steps(page), want);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(*next, 10);
}

TEST_F(EngineTest, RetriedBatchWithSameWriterSequenceAppliesOnce) {
  Open();
  Write({{0, 1.0}}, "loss", "writer-a", 1);
  WriteOutcome again = Write({{0, 1.0}}, "loss", "writer-a", 1);
  EXPECT_TRUE(again.duplicate_batch);
  // A batch whose sequence was applied is skipped even if its content differs (no rewind).
  WriteOutcome stale = Write({{0, 7.0}}, "loss", "writer-a", 1);
  EXPECT_TRUE(stale.duplicate_batch);
  Write({{1, 2.0}}, "loss", "writer-a", 2);
  EXPECT_EQ(Steps(Read()), (std::vector<std::pair<int64_t, double>>{{0, 1.0}, {1, 2.0}}));
  Open();
  EXPECT_TRUE(engine_->IsDuplicate("writer-a", 2));
  EXPECT_FALSE(engine_->IsDuplicate("writer-a", 3));
}

TEST_F(EngineTest, BatchLargerThanAChunkIsSplit) {
  Open(/*chunk_points=*/1024);
  std::vector<std::pair<int64_t, double>> rows;
  for (int s = 0; s < 100'000; ++s) rows.emplace_back(s, std::sin(s * 0.01));
  Write(rows);
  engine_->WaitForSealer();
  Open(1024);
  std::vector<Point> got = Read();
  ASSERT_EQ(got.size(), rows.size());
  EXPECT_EQ(got.back().step, 99'999);
}

}  // namespace
}  // namespace trainwatch::storage

namespace trainwatch::storage {
namespace {

// Times shared through the run clock come back exactly, also where a metric's time differs from
// the clock's (an evaluation logged later at the same step, a resumed run writing steps again).
TEST_F(EngineTest, TimesComeBackExactWithTheRunClock) {
  Open(/*chunk_points=*/4);
  std::vector<std::pair<int64_t, double>> rows;
  for (int s = 0; s < 12; ++s) rows.emplace_back(s, s * 0.5);
  Write(rows, "loss");
  Write(rows, "acc");
  // "val" at steps 3 and 7, logged later than the training rows: its times differ from the clock.
  v1::WriteRequest request;
  v1::RunBatch* batch = request.add_runs();
  batch->set_project("p");
  batch->set_run("r");
  batch->add_steps(3);
  batch->add_times(1767229999.125);
  batch->add_steps(7);
  batch->add_times(1767230000.5);
  v1::MetricColumn* val = batch->add_metrics();
  val->set_name("val");
  val->add_values(0.25);
  val->add_values(0.125);
  std::promise<void> done;
  engine_->Write(std::move(request),
                 [&](const Status& s, const WriteOutcome&) { done.set_value(); });
  done.get_future().get();
  engine_->WaitForSealer();

  for (int pass = 0; pass < 2; ++pass) {
    for (const char* metric : {"loss", "acc"}) {
      std::vector<Point> got = Read(metric);
      ASSERT_EQ(got.size(), 12u);
      for (const Point& p : got)
        EXPECT_EQ(p.time, 1767225600.0 + p.step) << metric << " step " << p.step;
    }
    std::vector<Point> v = Read("val");
    ASSERT_EQ(v.size(), 2u);
    EXPECT_EQ(v[0].time, 1767229999.125);
    EXPECT_EQ(v[1].time, 1767230000.5);
    auto metrics = engine_->ListMetrics("p", "r");
    EXPECT_EQ(metrics.size(), 3u) << "the clock is not a metric";
    EXPECT_EQ(engine_->MetricCountInRun("p", "r"), 3u);
    Open(4);
  }
}

}  // namespace
}  // namespace trainwatch::storage

namespace trainwatch::storage {
namespace {

// The value of trainwatch_checkpoints_total in the registry's exposition.
int Checkpoints(const MetricsRegistry& metrics) {
  std::string text = metrics.Render();
  const std::string name = "\ntrainwatch_checkpoints_total ";  // the sample, not the HELP line
  size_t at = text.find(name);
  return at == std::string::npos ? -1 : std::stoi(text.substr(at + name.size()));
}

TEST_F(EngineTest, CheckpointsOnATimerWhileWritten) {
  EngineOptions options;
  options.checkpoint_interval_seconds = 60;
  Open(options);
  // The checkpointer waits on clock_: each Advance, then AwaitWaiters, lets it act on the new time.
  clock_.AwaitWaiters(1);
  EXPECT_EQ(Checkpoints(metrics_), 0);
  Write({{0, 1.0}, {1, 2.0}});  // far below chunk_points: only a checkpoint seals it
  clock_.Advance(59);
  clock_.AwaitWaiters(1);
  EXPECT_EQ(Checkpoints(metrics_), 0);  // not before the interval
  clock_.Advance(1);
  clock_.AwaitWaiters(1);
  EXPECT_EQ(Checkpoints(metrics_), 1);
  // Idle: the timer finds nothing written and does not checkpoint again.
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(60);
    clock_.AwaitWaiters(1);
  }
  EXPECT_EQ(Checkpoints(metrics_), 1);
  Write({{2, 3.0}});
  clock_.Advance(60);
  clock_.AwaitWaiters(1);
  EXPECT_EQ(Checkpoints(metrics_), 2);
}

}  // namespace
}  // namespace trainwatch::storage

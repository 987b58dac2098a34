// Distributed runs in the engine: rank as a dimension of a series (docs/distributed.md).
#include <cmath>
#include <future>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/testing/temp_dir.h"
#include "storage/engine.h"
#include "storage/engine_test_util.h"

namespace trainwatch::storage {
namespace {

constexpr double kT0 = 1767225600.0;

class EngineRanksTest : public ::testing::Test {
 protected:
  void Open(size_t chunk_points = 4) {
    engine_.reset();
    EngineOptions options;
    options.chunk_points = chunk_points;
    auto engine = OpenTestEngine(dir_.path(), options, clock_, logger_, metrics_);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    engine_ = std::move(engine).value();
  }

  // One batch of `rank` (a negative rank: none) with rows [from, to) of `metric`, value
  // rank * 1000 + step.
  static v1::RunBatch* AddBatch(v1::WriteRequest* request, int rank, int64_t from, int64_t to,
                                const std::string& metric = "loss") {
    v1::RunBatch* batch = request->add_runs();
    batch->set_project("p");
    batch->set_run("job");
    if (rank >= 0) {
      batch->mutable_rank()->set_rank(static_cast<uint32_t>(rank));
      batch->mutable_rank()->set_world_size(4);
      batch->mutable_rank()->set_local_rank(static_cast<uint32_t>(rank % 2));
      batch->mutable_rank()->set_host("node-" + std::to_string(rank / 2));
    }
    v1::MetricColumn* column = batch->add_metrics();
    column->set_name(metric);
    for (int64_t step = from; step < to; ++step) {
      batch->add_steps(step);
      batch->add_times(kT0 + static_cast<double>(step) + 0.001 * std::max(rank, 0));
      column->add_values(std::max(rank, 0) * 1000.0 + static_cast<double>(step));
    }
    return batch;
  }

  void WriteRanks(int ranks, int64_t from, int64_t to) {
    v1::WriteRequest request;
    for (int r = 0; r < ranks; ++r) AddBatch(&request, r, from, to);
    WriteAndWait(*engine_, std::move(request));
  }

  std::vector<Point> Read(uint32_t rank, const std::string& metric = "loss") {
    std::vector<Point> out;
    Status s = engine_->ReadSeries(SeriesKey{"p", "job", metric, rank}, {}, &out);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }

  void ExpectRanksHold(int ranks, int64_t steps) {
    for (int r = 0; r < ranks; ++r) {
      std::vector<Point> points = Read(static_cast<uint32_t>(r));
      ASSERT_EQ(points.size(), static_cast<size_t>(steps)) << "rank " << r;
      for (int64_t s = 0; s < steps; ++s) {
        EXPECT_EQ(points[s].step, s);
        EXPECT_EQ(points[s].value, r * 1000.0 + static_cast<double>(s)) << "rank " << r;
        EXPECT_EQ(points[s].time, kT0 + static_cast<double>(s) + 0.001 * r) << "rank " << r;
      }
    }
  }

  test::TempDir dir_;
  ManualClock clock_;
  Logger logger_{LogLevel::kWarn};
  MetricsRegistry metrics_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(EngineRanksTest, EachRankIsADimensionOfTheRunsSeries) {
  Open();
  WriteRanks(4, 0, 10);
  ExpectRanksHold(4, 10);
  // The metric is listed once, however many ranks have it.
  std::vector<MetricInfo> metrics = engine_->ListMetrics("p", "job");
  ASSERT_EQ(metrics.size(), 1u);
  EXPECT_EQ(metrics[0].name, "loss");
  EXPECT_EQ(metrics[0].count, 10u) << "the run-level view is rank 0";
  EXPECT_EQ(metrics[0].latest.value, 9.0);
  EXPECT_EQ(engine_->MetricCountInRun("p", "job"), 1u);
  EXPECT_EQ(engine_->SeriesCountInProject("p"), 1u);
  EXPECT_EQ(engine_->MetricRanks({"p", "job", "loss"}), (std::vector<uint32_t>{0, 1, 2, 3}));
  EXPECT_TRUE(engine_->SeriesExists({"p", "job", "loss", 3}));
  EXPECT_FALSE(engine_->SeriesExists({"p", "job", "loss", 4}));
  std::vector<Point> none;
  EXPECT_EQ(engine_->ReadSeries({"p", "job", "loss", 7}, {}, &none).code(), StatusCode::kNotFound);

  std::optional<RunInfo> run = engine_->GetRun("p", "job");
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(run->rank_count, 4u);
  EXPECT_EQ(run->world_size, 4u);
  std::vector<RankState> ranks = engine_->ListRanks("p", "job");
  ASSERT_EQ(ranks.size(), 4u);
  EXPECT_EQ(ranks[3].rank, 3u);
  EXPECT_EQ(ranks[3].host, "node-1");
  EXPECT_EQ(ranks[3].local_rank, 1u);
  EXPECT_EQ(ranks[3].last_step, 9);
  EXPECT_EQ(ranks[3].last_write_time, kT0 + 9 + 0.003);
}

TEST_F(EngineRanksTest, RanksSurviveACleanRestart) {
  Open();
  WriteRanks(4, 0, 10);  // sealed chunks of 4 and heads of 2, per rank
  engine_.reset();       // closes with a checkpoint
  Open();
  ExpectRanksHold(4, 10);
  WriteRanks(4, 10, 13);
  std::vector<RankState> ranks = engine_->ListRanks("p", "job");
  ASSERT_EQ(ranks.size(), 4u);
  EXPECT_EQ(ranks[2].last_step, 12);
  EXPECT_EQ(ranks[2].host, "node-1");
}

// A child process writes and dies without closing (no shutdown checkpoint): the ranks' points
// and table come back by replaying the log over what the store holds.
class EngineRanksCrashTest : public EngineRanksTest, public ::testing::WithParamInterface<bool> {};

TEST_P(EngineRanksCrashTest, RanksSurviveReplayAfterACrash) {
  const bool checkpoint_midway = GetParam();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Open();
    WriteRanks(4, 0, 10);
    if (checkpoint_midway) {
      EXPECT_TRUE(engine_->Checkpoint().ok());
    }
    WriteRanks(4, 10, 15);
    _exit(::testing::Test::HasFailure() ? 1 : 0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the writer's own checks failed";
  for (int reopen = 0; reopen < 2; ++reopen) {
    Open();
    ExpectRanksHold(4, 15);
    std::vector<RankState> ranks = engine_->ListRanks("p", "job");
    ASSERT_EQ(ranks.size(), 4u);
    EXPECT_EQ(ranks[1].last_step, 14);
    EXPECT_EQ(ranks[1].host, "node-0");
    EXPECT_EQ(engine_->ListMetrics("p", "job").size(), 1u);
    EXPECT_EQ(engine_->SeriesCountInProject("p"), 1u);
    EXPECT_EQ(engine_->GetRun("p", "job")->world_size, 4u);
  }
}

INSTANTIATE_TEST_SUITE_P(Checkpoint, EngineRanksCrashTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Midway" : "None";
                         });

TEST_F(EngineRanksTest, RowsWithoutARankAreTheRunLevelRankZero) {
  Open();
  v1::WriteRequest request;
  AddBatch(&request, -1, 0, 3);
  AddBatch(&request, 1, 0, 3);
  WriteAndWait(*engine_, std::move(request));
  EXPECT_EQ(Read(0).size(), 3u);
  EXPECT_EQ(Read(1).size(), 3u);
  EXPECT_EQ(Read(1)[2].value, 1002.0);
}

TEST_F(EngineRanksTest, AMetricOnlyOneRankLogsIsListedOnce) {
  Open();
  v1::WriteRequest request;
  AddBatch(&request, 2, 0, 3, "dist/step_time");
  WriteAndWait(*engine_, std::move(request));
  std::vector<MetricInfo> metrics = engine_->ListMetrics("p", "job");
  ASSERT_EQ(metrics.size(), 1u);
  EXPECT_EQ(metrics[0].count, 3u);
  EXPECT_TRUE(engine_->SeriesExists({"p", "job", "dist/step_time"}));
  EXPECT_EQ(engine_->MetricRanks({"p", "job", "dist/step_time"}), (std::vector<uint32_t>{2}));
}

TEST_F(EngineRanksTest, TheRunFinishesWhenEveryRankHas) {
  Open();
  WriteRanks(3, 0, 2);
  for (int r = 0; r < 3; ++r) {
    v1::WriteRequest request;
    v1::RunBatch* batch = request.add_runs();
    batch->set_project("p");
    batch->set_run("job");
    batch->mutable_rank()->set_rank(static_cast<uint32_t>(r));
    batch->mutable_metadata()->set_status("finished");
    batch->mutable_metadata()->set_end_time(kT0 + 100 + r);
    WriteAndWait(*engine_, std::move(request));
    std::optional<RunInfo> run = engine_->GetRun("p", "job");
    ASSERT_TRUE(run.has_value());
    if (r < 2) {
      EXPECT_EQ(run->status, RunStatus::kRunning) << "after rank " << r;
      EXPECT_EQ(run->end_time, 0);
    } else {
      EXPECT_EQ(run->status, RunStatus::kFinished);
      EXPECT_EQ(run->end_time, kT0 + 102);
    }
    EXPECT_TRUE(engine_->ListRanks("p", "job")[r].finished);
  }
  engine_.reset();
  Open();
  std::vector<RankState> ranks = engine_->ListRanks("p", "job");
  ASSERT_EQ(ranks.size(), 3u);
  for (const RankState& rank : ranks) EXPECT_TRUE(rank.finished);
  EXPECT_EQ(engine_->GetRun("p", "job")->status, RunStatus::kFinished);
}

TEST_F(EngineRanksTest, HeartbeatsAreKeptPerRank) {
  Open();
  for (int r = 0; r < 2; ++r) {
    v1::WriteRequest request;
    v1::RunBatch* batch = request.add_runs();
    batch->set_project("p");
    batch->set_run("job");
    batch->mutable_rank()->set_rank(static_cast<uint32_t>(r));
    batch->mutable_heartbeat()->set_interval_seconds(5);
    batch->mutable_heartbeat()->set_received_time(kT0 + 10 * r);
    WriteAndWait(*engine_, std::move(request));
  }
  std::vector<RankState> ranks = engine_->ListRanks("p", "job");
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[0].last_heartbeat, kT0);
  EXPECT_EQ(ranks[1].last_heartbeat, kT0 + 10);
  EXPECT_EQ(ranks[1].heartbeat_interval, 5);
  EXPECT_EQ(engine_->GetRun("p", "job")->last_heartbeat, kT0 + 10);
}

TEST_F(EngineRanksTest, ARunRewindCutsEveryRanksSeries) {
  Open();
  WriteRanks(3, 0, 10);
  v1::WriteRequest request;
  v1::RunBatch* batch = request.add_runs();
  batch->set_project("p");
  batch->set_run("job");
  batch->mutable_metadata()->set_rewind_step(5);
  WriteOutcome outcome = WriteAndWait(*engine_, std::move(request));
  EXPECT_EQ(outcome.series_rewound, 3u);
  for (uint32_t r = 0; r < 3; ++r) EXPECT_EQ(Read(r).size(), 5u) << "rank " << r;
  engine_.reset();
  Open();
  for (uint32_t r = 0; r < 3; ++r) EXPECT_EQ(Read(r).size(), 5u) << "rank " << r;
}

TEST_F(EngineRanksTest, DeletingTheRunDeletesEveryRank) {
  Open();
  WriteRanks(4, 0, 10);
  ASSERT_TRUE(engine_->DeleteRun("p", "job").ok());
  EXPECT_EQ(engine_->SeriesCountInProject("p"), 0u);
  EXPECT_TRUE(engine_->ListRanks("p", "job").empty());
  engine_.reset();
  Open();
  EXPECT_FALSE(engine_->GetRun("p", "job").has_value());
  EXPECT_TRUE(engine_->ListRanks("p", "job").empty());
  EXPECT_FALSE(engine_->SeriesExists({"p", "job", "loss", 2}));
}

// 256 ranks × 50 metrics (bench/ranks_bench.py runs 1,024): the run's catalogue holds each name
// once, and a rank's series costs little beyond its points.
TEST_F(EngineRanksTest, ManyRanksCostOneNamePerMetric) {
  Open(1024);
  constexpr int kRanks = 256, kMetrics = 50;
  v1::WriteRequest request;
  for (int r = 0; r < kRanks; ++r) {
    v1::RunBatch* batch = request.add_runs();
    batch->set_project("p");
    batch->set_run("big");
    batch->mutable_rank()->set_rank(static_cast<uint32_t>(r));
    batch->mutable_rank()->set_world_size(kRanks);
    batch->add_steps(0);
    batch->add_times(kT0);
    for (int m = 0; m < kMetrics; ++m) {
      v1::MetricColumn* column = batch->add_metrics();
      column->set_name("m" + std::to_string(m));
      column->add_values(r + m);
    }
  }
  WriteAndWait(*engine_, std::move(request));
  EXPECT_EQ(engine_->ListMetrics("p", "big").size(), static_cast<size_t>(kMetrics));
  EXPECT_EQ(engine_->MetricCountInRun("p", "big"), static_cast<size_t>(kMetrics));
  EXPECT_EQ(engine_->SeriesCountInProject("p"), static_cast<size_t>(kMetrics));
  EXPECT_EQ(engine_->MetricRanks({"p", "big", "m7"}).size(), static_cast<size_t>(kRanks));
  EXPECT_EQ(engine_->GetRun("p", "big")->world_size, static_cast<uint32_t>(kRanks));
  // The in-memory state of one rank's series, before any point: what a rank adds per metric.
  EXPECT_LE(sizeof(Series), 512u);
  std::vector<Point> points;
  ASSERT_TRUE(engine_->ReadSeries({"p", "big", "m7", 200}, {}, &points).ok());
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].value, 207.0);
}

}  // namespace
}  // namespace trainwatch::storage

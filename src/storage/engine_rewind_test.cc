// Run-level rewinds (RunMetadata.rewind_step): every series of a run with visible points at or
// after the step starts a new timeline there; the state survives a clean restart and replay of
// the log after a crash (with and without a checkpoint after the rewind).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <future>
#include <map>
#include <tuple>

#include "common/testing/temp_dir.h"
#include "storage/engine.h"
#include "storage/engine_test_util.h"

namespace trainwatch::storage {
namespace {

using Rows = std::vector<std::pair<int64_t, double>>;

constexpr int64_t kRewindStep = 6;

class RunRewindTest : public ::testing::Test {
 protected:
  // Chunks of 4 points: most of what a rewind cuts below is in sealed chunks.
  void Open() {
    engine_.reset();
    EngineOptions options;
    options.chunk_points = 4;
    auto engine = OpenTestEngine(dir_.path(), options, clock_, logger_, metrics_);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    engine_ = std::move(engine).value();
  }

  WriteOutcome Apply(v1::WriteRequest request) { return WriteAndWait(*engine_, std::move(request)); }

  WriteOutcome Write(const std::string& metric, const Rows& rows) {
    v1::WriteRequest request;
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
    return Apply(std::move(request));
  }

  // `only`: RunMetadata.rewind_series (empty: every series).
  WriteOutcome Rewind(int64_t step, const std::vector<std::string>& only = {}) {
    v1::WriteRequest request;
    v1::RunBatch* batch = request.add_runs();
    batch->set_project("p");
    batch->set_run("r");
    batch->mutable_metadata()->set_rewind_step(step);
    for (const std::string& name : only) batch->mutable_metadata()->add_rewind_series(name);
    return Apply(std::move(request));
  }

  Rows Read(const std::string& metric) {
    std::vector<Point> points;
    Status s = engine_->ReadSeries({"p", "r", metric}, {}, &points);
    EXPECT_TRUE(s.ok()) << s.ToString();
    Rows out;
    for (const Point& p : points) out.emplace_back(p.step, p.value);
    return out;
  }

  std::vector<std::tuple<int64_t, double, uint32_t>> Superseded(const std::string& metric) {
    std::vector<SupersededPoint> hidden;
    Status s = engine_->ReadSuperseded({"p", "r", metric}, &hidden);
    EXPECT_TRUE(s.ok()) << s.ToString();
    std::vector<std::tuple<int64_t, double, uint32_t>> out;
    for (const SupersededPoint& h : hidden) out.emplace_back(h.point.step, h.point.value, h.gen);
    return out;
  }

  std::map<std::string, MetricInfo> Metrics() {
    std::map<std::string, MetricInfo> out;
    for (MetricInfo& m : engine_->ListMetrics("p", "r")) out[m.name] = m;
    return out;
  }

  // The lock-free latest values (what run lists and sorting read): metric -> step.
  std::map<std::string, int64_t> PublishedLatest() {
    std::map<std::string, int64_t> out;
    auto latest = engine_->LatestValues({RunKey{"p", "r"}}, {"loss", "lr", "acc", "late"});
    for (const auto& [metric, point] : latest[0]) out[metric] = point.step;
    return out;
  }

  // Four series, then a rewind at step 6:
  //   loss  0-7 sealed, 8-9 in the head  -> cut in a sealed chunk and in the head
  //   lr    0-7 sealed, nothing in memory -> only chunk marks and the series record change
  //   acc   0-2 in the head               -> wholly before the step: untouched
  //   late  6-9 sealed                    -> everything hidden: no latest value left
  // and afterwards the restarted run writes loss at 6 and 7 again.
  void WriteScenario() {
    Rows loss, lr;
    for (int64_t s = 0; s < 8; ++s) {
      loss.emplace_back(s, 100.0 + s);
      lr.emplace_back(s, 0.5 + s);
    }
    Write("loss", loss);
    Write("loss", {{8, 108}, {9, 109}});
    Write("lr", lr);
    Write("acc", {{0, 0.1}, {1, 0.2}, {2, 0.3}});
    Write("late", {{6, 6}, {7, 7}, {8, 8}, {9, 9}});

    WriteOutcome o = Rewind(kRewindStep);
    EXPECT_EQ(o.series_rewound, 3u) << "loss, lr and late; not acc, not the run clock";
    EXPECT_EQ(o.points_written, 0u);
    EXPECT_EQ(Read("loss"), (Rows{{0, 100}, {1, 101}, {2, 102}, {3, 103}, {4, 104}, {5, 105}}));
    EXPECT_EQ(Read("lr"), (Rows{{0, 0.5}, {1, 1.5}, {2, 2.5}, {3, 3.5}, {4, 4.5}, {5, 5.5}}));
    EXPECT_EQ(Read("late"), Rows{});
    auto metrics = Metrics();
    EXPECT_EQ(metrics["loss"].latest.step, 5);
    EXPECT_EQ(metrics["loss"].latest.value, 105.0);
    EXPECT_EQ(metrics["loss"].count, 6u);
    EXPECT_EQ(metrics["lr"].latest.value, 5.5);
    EXPECT_FALSE(metrics["late"].has_latest);
    EXPECT_EQ(metrics["late"].count, 0u);
    EXPECT_EQ(metrics["acc"].timelines, 1u) << "a series wholly before the step gets no new timeline";
    EXPECT_EQ(metrics["acc"].latest.step, 2);
    EXPECT_EQ(PublishedLatest(), (std::map<std::string, int64_t>{{"loss", 5}, {"lr", 5}, {"acc", 2}}));

    WriteOutcome again = Rewind(kRewindStep);
    EXPECT_EQ(again.series_rewound, 0u) << "nothing visible at or after the step is left to hide";
    EXPECT_EQ(Metrics()["loss"].timelines, 2u);

    WriteOutcome fresh = Write("loss", {{6, -6}, {7, -7}});
    EXPECT_EQ(fresh.points_written, 2u);
    EXPECT_EQ(fresh.rewinds, 0u) << "the steps were emptied by the run rewind";
    ExpectFinalState();
  }

  void ExpectFinalState() {
    EXPECT_EQ(Read("loss"),
              (Rows{{0, 100}, {1, 101}, {2, 102}, {3, 103}, {4, 104}, {5, 105}, {6, -6}, {7, -7}}));
    EXPECT_EQ(Superseded("loss"), (std::vector<std::tuple<int64_t, double, uint32_t>>{
                                      {6, 106, 0}, {7, 107, 0}, {8, 108, 0}, {9, 109, 0}}));
    EXPECT_EQ(Read("lr"), (Rows{{0, 0.5}, {1, 1.5}, {2, 2.5}, {3, 3.5}, {4, 4.5}, {5, 5.5}}));
    EXPECT_EQ(Superseded("lr"),
              (std::vector<std::tuple<int64_t, double, uint32_t>>{{6, 6.5, 0}, {7, 7.5, 0}}));
    EXPECT_EQ(Read("acc"), (Rows{{0, 0.1}, {1, 0.2}, {2, 0.3}}));
    EXPECT_EQ(Superseded("acc").size(), 0u);
    EXPECT_EQ(Read("late"), Rows{});
    EXPECT_EQ(Superseded("late"), (std::vector<std::tuple<int64_t, double, uint32_t>>{
                                      {6, 6, 0}, {7, 7, 0}, {8, 8, 0}, {9, 9, 0}}));
    auto metrics = Metrics();
    EXPECT_EQ(metrics["loss"].timelines, 2u);
    EXPECT_EQ(metrics["loss"].latest.step, 7);
    EXPECT_EQ(metrics["loss"].latest.value, -7.0);
    EXPECT_EQ(metrics["lr"].timelines, 2u);
    EXPECT_EQ(metrics["lr"].latest.step, 5);
    EXPECT_EQ(metrics["late"].timelines, 2u);
    EXPECT_FALSE(metrics["late"].has_latest);
    EXPECT_EQ(metrics["acc"].timelines, 1u);
    EXPECT_EQ(PublishedLatest(), (std::map<std::string, int64_t>{{"loss", 7}, {"lr", 5}, {"acc", 2}}));
  }

  test::TempDir dir_;
  ManualClock clock_;
  Logger logger_{LogLevel::kWarn};
  MetricsRegistry metrics_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(RunRewindTest, HidesEveryLaterPointOfEverySeriesAndSurvivesARestart) {
  Open();
  WriteScenario();
  Open();  // the shutdown checkpoint persisted everything
  ExpectFinalState();
  EXPECT_EQ(Rewind(kRewindStep + 10).series_rewound, 0u);
}

TEST_F(RunRewindTest, ANegativeStepInTheLogHidesEverything) {
  // The ingestor refuses it; the engine applies what the log holds without trusting it.
  Open();
  Write("loss", {{0, 1}, {1, 2}});
  EXPECT_EQ(Rewind(-5).series_rewound, 1u);
  EXPECT_EQ(Read("loss"), Rows{});
  EXPECT_EQ(Superseded("loss").size(), 2u);
}

// TensorBoard's per-tag purge (RunMetadata.rewind_series): a re-run writes "step" again from 0
// with identical values. The resume rule alone takes them as retries and leaves the old run's
// later points visible; a series rewind at 0 before them makes them a new timeline, and leaves
// the series not named alone.
TEST_F(RunRewindTest, ASeriesRewindMakesIdenticalValuesANewTimelineForTheNamedSeriesOnly) {
  Open();
  Write("step", {{0, 0}, {1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 5}});
  Write("loss", {{0, 9}, {1, 8}, {2, 7}, {3, 6}, {4, 5}, {5, 4}});
  EXPECT_EQ(Write("step", {{0, 0}}).points_unchanged, 1u) << "the resume rule: a retry";
  EXPECT_EQ(Read("step").size(), 6u);

  WriteOutcome o = Rewind(0, {"step", "step", "no-such-series", kClockMetric});
  EXPECT_EQ(o.series_rewound, 1u) << "only 'step', once; unknown names and the clock ignored";
  EXPECT_EQ(Read("step"), Rows{});
  EXPECT_EQ(Read("loss").size(), 6u) << "a series not named keeps its points";
  Write("step", {{0, 0}, {1, 1}});
  auto expect = [&] {
    EXPECT_EQ(Read("step"), (Rows{{0, 0}, {1, 1}}));
    EXPECT_EQ(Superseded("step").size(), 6u);
    EXPECT_EQ(Metrics()["step"].timelines, 2u);
    EXPECT_EQ(Metrics()["loss"].timelines, 1u);
    EXPECT_EQ(Read("loss").size(), 6u);
  };
  expect();
  EXPECT_EQ(Rewind(2, {"step"}).series_rewound, 0u) << "nothing visible at or after 2";
  Open();
  expect();
}

// A child process writes the scenario and dies without closing (no shutdown checkpoint). With a
// checkpoint right after the writes, the log before it is gone: the rewind must be in the store
// (also the one of "lr", which held no points in memory); without one, replay re-applies it.
class RunRewindCrashTest : public RunRewindTest, public ::testing::WithParamInterface<bool> {};

TEST_P(RunRewindCrashTest, TheRewindSurvivesACrash) {
  const bool checkpoint_before_crash = GetParam();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Open();
    WriteScenario();
    if (checkpoint_before_crash) {
      EXPECT_TRUE(engine_->Checkpoint().ok());
    }
    _exit(::testing::Test::HasFailure() ? 1 : 0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the writer's own checks failed";
  Open();
  ExpectFinalState();
  Open();  // and once more, from what the first recovery checkpointed
  ExpectFinalState();
}

INSTANTIATE_TEST_SUITE_P(Checkpoint, RunRewindCrashTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "AfterTheRewind" : "None";
                         });

}  // namespace
}  // namespace trainwatch::storage

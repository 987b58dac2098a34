#include "server/liveness.h"

#include <gtest/gtest.h>

#include <future>

#include "common/testing/temp_dir.h"
#include "storage/engine_test_util.h"

namespace trainwatch::server {
namespace {

class LivenessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto engine = storage::OpenTestEngine(dir_.path(), {}, clock_, logger_, metrics_);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    engine_ = std::move(engine).value();
    ingestor_ =
        std::make_unique<ingest::Ingestor>(*engine_, clock_, ingest::IngestLimits{}, metrics_);
  }

  void Write(const std::string& run, const std::function<void(v1::RunBatch*)>& fill) {
    v1::WriteRequest request;
    v1::RunBatch* batch = request.add_runs();
    batch->set_project("p");
    batch->set_run(run);
    fill(batch);
    std::promise<void> done;
    ingestor_->WriteProto(std::move(request), [&](ingest::IngestResult r) {
      EXPECT_TRUE(r.status.ok() && r.errors.empty());
      done.set_value();
    });
    done.get_future().get();
  }

  void Heartbeat(const std::string& run, double interval = 0.5) {
    Write(run, [&](v1::RunBatch* b) { b->mutable_heartbeat()->set_interval_seconds(interval); });
  }

  void SetStatus(const std::string& run, const std::string& status) {
    Write(run, [&](v1::RunBatch* b) { b->mutable_metadata()->set_status(status); });
  }

  storage::RunInfo Run(const std::string& run) {
    auto info = engine_->GetRun("p", run);
    EXPECT_TRUE(info.has_value()) << run;
    return info.value_or(storage::RunInfo{});
  }

  test::TempDir dir_;
  ManualClock clock_;
  Logger logger_{LogLevel::kError};
  MetricsRegistry metrics_;
  std::unique_ptr<storage::Engine> engine_;
  std::unique_ptr<ingest::Ingestor> ingestor_;
};

TEST_F(LivenessTest, SilentRunIsCrashedAfterThreeIntervalsAndAHeartbeatRevivesIt) {
  LivenessMonitor monitor(*engine_, *ingestor_, clock_, logger_);
  Heartbeat("r", 0.5);
  const double last = clock_.NowUnixSeconds();
  clock_.Advance(1.5);  // exactly three intervals: not yet
  EXPECT_EQ(monitor.SweepOnce(), 0u);
  EXPECT_EQ(Run("r").status, storage::RunStatus::kRunning);
  clock_.Advance(0.01);
  EXPECT_EQ(monitor.SweepOnce(), 1u);
  EXPECT_EQ(Run("r").status, storage::RunStatus::kCrashed);
  EXPECT_EQ(Run("r").end_time, last) << "a crashed run ends at its last heartbeat";
  EXPECT_EQ(monitor.SweepOnce(), 0u) << "declared once";

  Heartbeat("r", 0.5);
  EXPECT_EQ(Run("r").status, storage::RunStatus::kRunning);
  EXPECT_EQ(Run("r").end_time, 0);
  clock_.Advance(1);
  EXPECT_EQ(monitor.SweepOnce(), 0u);
}

TEST_F(LivenessTest, FinishedRunsAndRunsWithoutHeartbeatsAreLeftAlone) {
  LivenessMonitor monitor(*engine_, *ingestor_, clock_, logger_);
  Heartbeat("finished", 0.5);
  SetStatus("finished", "finished");
  Heartbeat("finished", 0.5);  // after finishing: changes nothing
  Write("plain", [](v1::RunBatch* b) {
    b->add_steps(1);
    v1::MetricColumn* c = b->add_metrics();
    c->set_name("loss");
    c->add_values(1);
  });
  clock_.Advance(3600);
  EXPECT_EQ(monitor.SweepOnce(), 0u);
  EXPECT_EQ(Run("finished").status, storage::RunStatus::kFinished);
  EXPECT_EQ(Run("plain").status, storage::RunStatus::kRunning);
}

TEST_F(LivenessTest, AStartingServerGivesEveryRunAFreshGracePeriod) {
  Heartbeat("r", 10);
  clock_.Advance(3600);  // silent for an hour while "the server was down"
  LivenessMonitor monitor(*engine_, *ingestor_, clock_, logger_);
  clock_.Advance(29);
  EXPECT_EQ(monitor.SweepOnce(), 0u);
  clock_.Advance(2);
  EXPECT_EQ(monitor.SweepOnce(), 1u);
  EXPECT_EQ(Run("r").status, storage::RunStatus::kCrashed);
}

TEST_F(LivenessTest, SweepsOnItsOwnThread) {
  LivenessOptions options;
  options.sweep_interval_seconds = 1;
  LivenessMonitor monitor(*engine_, *ingestor_, clock_, logger_, options);
  Heartbeat("r", 1);
  monitor.Start();
  // Two threads wait on clock_: the monitor and the engine's checkpointer. After each Advance,
  // AwaitWaiters(2) returns once both acted on the new time.
  clock_.AwaitWaiters(2);
  clock_.Advance(2.5);  // one sweep, 2.5 s after the last heartbeat: not yet overdue
  clock_.AwaitWaiters(2);
  EXPECT_EQ(Run("r").status, storage::RunStatus::kRunning);
  clock_.Advance(1);  // the next sweep, 3.5 s after it: three intervals missed
  clock_.AwaitWaiters(2);
  EXPECT_EQ(Run("r").status, storage::RunStatus::kCrashed);
  monitor.Stop();
}

// Cluster mode: only the owner of a run's partition declares it crashed.
TEST_F(LivenessTest, InAClusterOnlyTheRunsOwnerDeclaresItCrashed) {
  bool owned = false;
  LivenessOptions options;
  options.owns = [&](const std::string& project, const std::string& run) {
    EXPECT_EQ(project, "p");
    EXPECT_EQ(run, "r");
    return owned;
  };
  LivenessMonitor monitor(*engine_, *ingestor_, clock_, logger_, options);
  Heartbeat("r", 0.5);
  clock_.Advance(10);
  EXPECT_EQ(monitor.SweepOnce(), 0u) << "another node owns it";
  EXPECT_EQ(Run("r").status, storage::RunStatus::kRunning);
  owned = true;  // taken over
  EXPECT_EQ(monitor.SweepOnce(), 1u);
  EXPECT_EQ(Run("r").status, storage::RunStatus::kCrashed);
}

}  // namespace
}  // namespace trainwatch::server

#include "storage/retention.h"

#include <future>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/testing/temp_dir.h"
#include "storage/engine_test_util.h"

namespace trainwatch::storage {
namespace {

constexpr double kDay = 86400;

class RetentionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    EngineOptions options;
    options.chunk_points = 4;
    auto engine = OpenTestEngine(dir_.path(), options, clock_, logger_, metrics_);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    engine_ = std::move(engine).value();
  }

  // Writes `n` points of run `run` starting at time `t0`, one per second; optionally finishes it.
  void WriteRun(const std::string& project, const std::string& run, double t0, int n,
                bool finished) {
    v1::WriteRequest request;
    v1::RunBatch* batch = request.add_runs();
    batch->set_project(project);
    batch->set_run(run);
    if (finished) {
      batch->mutable_metadata()->set_status("finished");
      batch->mutable_metadata()->set_end_time(t0 + n);
    }
    v1::MetricColumn* column = batch->add_metrics();
    column->set_name("loss");
    for (int i = 0; i < n; ++i) {
      batch->add_steps(i);
      batch->add_times(t0 + i);
      column->add_values(i);
    }
    std::promise<void> done;
    engine_->Write(std::move(request), [&](const Status& s, const WriteOutcome&) {
      EXPECT_TRUE(s.ok());
      done.set_value();
    });
    done.get_future().get();
  }

  // Metadata only: a status and an end time, as any writer may send.
  void SetStatus(const std::string& project, const std::string& run, const std::string& status,
                 double end_time) {
    v1::WriteRequest request;
    v1::RunBatch* batch = request.add_runs();
    batch->set_project(project);
    batch->set_run(run);
    batch->mutable_metadata()->set_status(status);
    if (end_time > 0) batch->mutable_metadata()->set_end_time(end_time);
    WriteAndWait(*engine_, std::move(request));
  }

  // A heartbeat received now (the server's clock).
  void Heartbeat(const std::string& project, const std::string& run) {
    v1::WriteRequest request;
    v1::RunBatch* batch = request.add_runs();
    batch->set_project(project);
    batch->set_run(run);
    batch->mutable_heartbeat()->set_interval_seconds(10);
    batch->mutable_heartbeat()->set_received_time(clock_.NowUnixSeconds());
    WriteAndWait(*engine_, std::move(request));
  }

  size_t Count(const std::string& project, const std::string& run) {
    std::vector<Point> points;
    Status s = engine_->ReadSeries({project, run, "loss"}, {}, &points);
    return s.ok() ? points.size() : 0;
  }

  test::TempDir dir_;
  ManualClock clock_{1767225600.0};
  Logger logger_{LogLevel::kError};
  MetricsRegistry metrics_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(RetentionTest, MaxAgeDeletesOnlyOldChunksOfThatProject) {
  double now = clock_.NowUnixSeconds();
  WriteRun("short", "old", now - 40 * kDay, 8, false);
  WriteRun("short", "new", now - 1 * kDay, 8, false);
  WriteRun("forever", "old", now - 40 * kDay, 8, false);
  ASSERT_TRUE(engine_->Checkpoint().ok());
  RetentionOptions options;
  options.max_age_seconds["short"] = 30 * kDay;
  Retention retention(
      *engine_, clock_, logger_, options, [] { return Result<double>(10.0); }, [](Status) {});
  ASSERT_TRUE(retention.RunOnce().ok());
  EXPECT_EQ(Count("short", "old"), 0u);
  EXPECT_EQ(Count("short", "new"), 8u);
  EXPECT_EQ(Count("forever", "old"), 8u);
}

TEST_F(RetentionTest, DiskGuardDeletesOldFinishedRunsThenRefusesWrites) {
  double now = clock_.NowUnixSeconds();
  WriteRun("p", "finished-long-ago", now - 30 * kDay, 8, true);
  WriteRun("p", "finished-yesterday", now - 1 * kDay, 8, true);
  WriteRun("p", "still-running", now - 30 * kDay, 8, false);
  double used = 99;
  Status refusal;
  std::vector<std::string> told;  // the engine's run-deleted listener (a run's stored report)
  engine_->SetRunDeletedListener([&](const RunKey& run) { told.push_back(run.run); });
  RetentionOptions options;
  Retention retention(
      *engine_, clock_, logger_, options, [&] { return Result<double>(used); },
      [&](Status s) { refusal = std::move(s); });
  ASSERT_TRUE(retention.RunOnce().ok());
  EXPECT_FALSE(engine_->GetRun("p", "finished-long-ago").has_value());
  EXPECT_EQ(told, std::vector<std::string>{"finished-long-ago"});
  EXPECT_TRUE(engine_->GetRun("p", "finished-yesterday").has_value());
  EXPECT_TRUE(engine_->GetRun("p", "still-running").has_value());
  // Still full and nothing else may go: writes are refused, with the reason.
  EXPECT_EQ(refusal.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refusal.message().find("writes are refused"), std::string::npos);
  EXPECT_TRUE(retention.refusing());

  used = 50;
  ASSERT_TRUE(retention.RunOnce().ok());
  EXPECT_TRUE(refusal.ok());
  EXPECT_FALSE(retention.refusing());
}

// Crashed and stalled runs are over too; an old end time that a client set on a run it is still
// writing (or heartbeating) does not make it eligible; a running run never is.
TEST_F(RetentionTest, DiskGuardCoversCrashedAndStalledRunsAndTrustsNoEndTimeAlone) {
  const double now = clock_.NowUnixSeconds();
  WriteRun("p", "crashed-long-ago", now - 30 * kDay, 8, false);
  SetStatus("p", "crashed-long-ago", "crashed", 0);
  WriteRun("p", "stalled-long-ago", now - 20 * kDay, 8, false);
  SetStatus("p", "stalled-long-ago", "stalled", 0);
  WriteRun("p", "crashed-yesterday", now - 1 * kDay, 8, false);
  SetStatus("p", "crashed-yesterday", "crashed", 0);
  // Points written just now, then marked finished with an end time a month ago.
  WriteRun("p", "old-end-time-new-points", now - 8, 8, false);
  SetStatus("p", "old-end-time-new-points", "finished", now - 30 * kDay);
  // Old points, an old end time, but a heartbeat the server received now.
  WriteRun("p", "old-end-time-live-heartbeat", now - 30 * kDay, 8, false);
  Heartbeat("p", "old-end-time-live-heartbeat");
  SetStatus("p", "old-end-time-live-heartbeat", "finished", now - 30 * kDay);
  WriteRun("p", "running-silent", now - 30 * kDay, 8, false);

  EXPECT_EQ(LastActivity(*engine_->GetRun("p", "old-end-time-new-points")), now - 1);
  EXPECT_EQ(LastActivity(*engine_->GetRun("p", "old-end-time-live-heartbeat")), now);
  Status refusal;
  Retention retention(
      *engine_, clock_, logger_, RetentionOptions{}, [] { return Result<double>(99.0); },
      [&](Status s) { refusal = std::move(s); });
  ASSERT_TRUE(retention.RunOnce().ok());
  EXPECT_FALSE(engine_->GetRun("p", "crashed-long-ago").has_value());
  EXPECT_FALSE(engine_->GetRun("p", "stalled-long-ago").has_value());
  EXPECT_TRUE(engine_->GetRun("p", "crashed-yesterday").has_value());
  EXPECT_TRUE(engine_->GetRun("p", "old-end-time-new-points").has_value());
  EXPECT_TRUE(engine_->GetRun("p", "old-end-time-live-heartbeat").has_value());
  EXPECT_TRUE(engine_->GetRun("p", "running-silent").has_value());
  EXPECT_EQ(refusal.code(), StatusCode::kResourceExhausted);

  // A week later the crashed run of yesterday and the finished ones are old enough; the running
  // one never is.
  clock_.Advance(8 * kDay);
  ASSERT_TRUE(retention.RunOnce().ok());
  EXPECT_FALSE(engine_->GetRun("p", "crashed-yesterday").has_value());
  EXPECT_FALSE(engine_->GetRun("p", "old-end-time-new-points").has_value());
  EXPECT_FALSE(engine_->GetRun("p", "old-end-time-live-heartbeat").has_value());
  EXPECT_TRUE(engine_->GetRun("p", "running-silent").has_value());
}

// Near the threshold the guard polls often, so that it acts before the disk fills between two
// regular passes; far from it, at the regular interval.
TEST_F(RetentionTest, TheGuardPollsSoonerNearTheThreshold) {
  double used = 50;
  RetentionOptions options;  // threshold 95, margin 5, near poll 5 s
  Retention retention(
      *engine_, clock_, logger_, options, [&] { return Result<double>(used); }, [](Status) {});
  EXPECT_EQ(retention.NextPollSeconds(60), 5) << "nothing measured yet";
  ASSERT_TRUE(retention.RunOnce().ok());
  EXPECT_EQ(retention.NextPollSeconds(60), 60);
  used = 90.5;
  ASSERT_TRUE(retention.RunOnce().ok());
  EXPECT_EQ(retention.NextPollSeconds(60), 5);
  EXPECT_EQ(retention.NextPollSeconds(2), 2) << "never longer than the regular interval";
  used = 99;
  ASSERT_TRUE(retention.RunOnce().ok());
  EXPECT_TRUE(retention.refusing());
  EXPECT_EQ(retention.NextPollSeconds(60), 5);
  used = 10;
  ASSERT_TRUE(retention.RunOnce().ok());
  EXPECT_FALSE(retention.refusing());
  EXPECT_EQ(retention.NextPollSeconds(60), 60);
}

}  // namespace
}  // namespace trainwatch::storage

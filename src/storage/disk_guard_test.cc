#include "storage/disk_guard.h"

#include <future>

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
  Retention retention(*engine_, clock_, logger_, options, [] { return Result<double>(10.0); },
                      [](Status) {});
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
  RetentionOptions options;
  Retention retention(*engine_, clock_, logger_, options, [&] { return Result<double>(used); },
                      [&](Status s) { refusal = std::move(s); });
  ASSERT_TRUE(retention.RunOnce().ok());
  EXPECT_FALSE(engine_->GetRun("p", "finished-long-ago").has_value());
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

}  // namespace
}  // namespace trainwatch::storage

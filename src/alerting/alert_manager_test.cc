#include "alerting/alert_manager.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/mutex.h"
#include "common/testing/temp_dir.h"

namespace trainwatch::alerting {
namespace {

constexpr double kT0 = 1.8e9;

class AlertManagerTest : public testing::Test {
 protected:
  void SetUp() override { Open(); }
  void TearDown() override { Close(); }

  void Open() {
    AlertManagerOptions options;
    options.stall_check_interval_seconds = 0.01;  // of clock_: a check at each Advance
    Open(options);
  }
  void Open(AlertManagerOptions options) {
    auto m = AlertManager::Open(options, PosixFileSystem(), dir_.Join("alerts"), clock_, logger_,
                                metrics_, std::make_shared<const rules::RuleSet>());
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    manager_ = std::move(*m);
    manager_->SetNotify([this](const notify::Notification& n) {
      MutexLock lock(mu_);
      sent_.push_back(n.status + " " + n.kind + "@" + std::to_string(n.step));
      last_ = n;
      return Status::Ok();
    });
    manager_->SetChangeListener([this](const AlertRecord& a) {
      MutexLock lock(mu_);
      ++changes_;
    });
    manager_->Start();
  }
  void Close() {
    if (manager_) manager_->Stop();
    manager_.reset();
  }

  // One training record of run `run` at `step` (time kT0 + step), committed.
  void Write(int64_t step, double loss, const std::string& run = "r1") {
    v1::WriteRequest request;
    v1::RunBatch* batch = request.add_runs();
    batch->set_project("p");
    batch->set_run(run);
    batch->add_steps(step);
    batch->add_times(kT0 + static_cast<double>(step));
    v1::MetricColumn* column = batch->add_metrics();
    column->set_name("loss");
    column->add_values(loss);
    manager_->OnCommit(request);
  }
  void WriteHealthy(int64_t from, int64_t to) {
    for (int64_t s = from; s < to; ++s) Write(s, 1.0 + 0.01 * static_cast<double>(s % 3));
  }
  void Finish(const std::string& run = "r1") {
    v1::WriteRequest request;
    v1::RunBatch* batch = request.add_runs();
    batch->set_project("p");
    batch->set_run(run);
    batch->mutable_metadata()->set_status("finished");
    manager_->OnCommit(request);
  }
  std::vector<std::string> Sent() {
    manager_->Flush();
    MutexLock lock(mu_);
    return sent_;
  }
  std::vector<AlertRecord> All() { return manager_->List(AlertQuery{}); }

  test::TempDir dir_;
  ManualClock clock_{kT0 + 1000};
  Logger logger_{LogLevel::kError};
  MetricsRegistry metrics_;
  std::unique_ptr<AlertManager> manager_;
  Mutex mu_;
  std::vector<std::string> sent_ TW_GUARDED_BY(mu_);
  notify::Notification last_ TW_GUARDED_BY(mu_);
  int changes_ TW_GUARDED_BY(mu_) = 0;
};

TEST_F(AlertManagerTest, NanFiresOnceAndResolvesWhenTheLossIsFiniteAgain) {
  WriteHealthy(0, 100);
  Write(100, NAN);
  EXPECT_THAT(Sent(), testing::ElementsAre("firing nan@100"));
  {
    MutexLock lock(mu_);
    EXPECT_EQ(last_.project, "p");
    EXPECT_EQ(last_.run, "r1");
    EXPECT_EQ(last_.metric, "loss");
    EXPECT_EQ(last_.severity, "critical");
    EXPECT_EQ(last_.chart_url, "http://127.0.0.1:8080/#/runs/p/r1?metric=loss&step=100");
  }
  AlertQuery firing_only;
  firing_only.status = AlertStatus::kFiring;
  auto firing = manager_->List(firing_only);
  ASSERT_EQ(firing.size(), 1u);
  EXPECT_EQ(firing[0].kind, "nan");
  WriteHealthy(101, 120);
  EXPECT_THAT(Sent(), testing::ElementsAre("firing nan@100", "resolved nan@100"));
  auto all = All();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].status, AlertStatus::kResolved);
  EXPECT_EQ(all[0].resolved_step, 110);
  MutexLock lock(mu_);
  EXPECT_GE(changes_, 2);
}

TEST_F(AlertManagerTest, ARepeatWhileOpenIsTheSameAlert) {
  WriteHealthy(0, 100);
  Write(100, NAN);
  Write(101, 1.0);
  Write(102, NAN);  // a second onset inside the same incident
  EXPECT_THAT(Sent(), testing::ElementsAre("firing nan@100"));
  auto all = All();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].occurrences, 2u);
  EXPECT_EQ(all[0].step, 100);
}

TEST_F(AlertManagerTest, FlappingWithinTheCooldownReopensQuietly) {
  WriteHealthy(0, 100);
  Write(100, NAN);
  WriteHealthy(101, 120);
  Write(150, NAN);
  WriteHealthy(151, 170);
  EXPECT_THAT(Sent(), testing::ElementsAre("firing nan@100", "resolved nan@100"));
  auto all = All();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].occurrences, 2u);
  EXPECT_EQ(all[0].status, AlertStatus::kResolved);
}

TEST_F(AlertManagerTest, AfterTheCooldownARecurrenceIsANewAlert) {
  Close();
  AlertManagerOptions options;
  options.stall_check_interval_seconds = 3600;  // the run is silent for 601 s: no stall check here
  Open(options);
  WriteHealthy(0, 100);
  Write(100, NAN);
  WriteHealthy(101, 120);
  Sent();
  clock_.Advance(601);
  Write(150, NAN);
  EXPECT_THAT(Sent(), testing::ElementsAre("firing nan@100", "resolved nan@100", "firing nan@150"));
  EXPECT_EQ(All().size(), 2u);
}

TEST_F(AlertManagerTest, SilencedAlertsAreRecordedButNotSent) {
  Silence s;
  s.project = "p";
  s.kind = "nan";
  s.ends_at = clock_.NowUnixSeconds() + 3600;
  auto added = manager_->AddSilence(s);
  ASSERT_TRUE(added.ok()) << added.status().ToString();
  WriteHealthy(0, 100);
  Write(100, NAN);
  WriteHealthy(101, 120);
  EXPECT_THAT(Sent(), testing::IsEmpty());
  auto all = All();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].silenced_by, added->id);
  // Expired, the silence no longer applies.
  ASSERT_TRUE(manager_->ExpireSilence(added->id).ok());
  EXPECT_THAT(manager_->Silences(false), testing::IsEmpty());
  Write(200, NAN, "r2");
  EXPECT_THAT(Sent(), testing::ElementsAre("firing nan@200"));
}

TEST_F(AlertManagerTest, SilenceThatAlreadyEndedIsRejected) {
  Silence s;
  s.ends_at = clock_.NowUnixSeconds() - 1;
  EXPECT_EQ(manager_->AddSilence(s).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(AlertManagerTest, AlertsAndAcknowledgementsSurviveARestartAndStillDeduplicate) {
  WriteHealthy(0, 100);
  Write(100, NAN);
  Sent();
  auto acked = manager_->Acknowledge(All()[0].id, true, "ana");
  ASSERT_TRUE(acked.ok());
  EXPECT_EQ(manager_->Acknowledge(999, true, "x").status().code(), StatusCode::kNotFound);
  Close();
  {
    MutexLock lock(mu_);  // no other thread now, but the analysis does not know that
    sent_.clear();
  }
  Open();
  auto all = All();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_TRUE(all[0].acknowledged);
  EXPECT_EQ(all[0].acknowledged_by, "ana");
  EXPECT_EQ(all[0].status, AlertStatus::kFiring);
  // A fresh detector sees the NaN again: the open alert takes it, nothing is sent twice.
  WriteHealthy(0, 100);
  Write(100, NAN);
  EXPECT_THAT(Sent(), testing::IsEmpty());
  EXPECT_EQ(All().size(), 1u);
}

TEST_F(AlertManagerTest, AFinishedRunResolvesItsOpenAlerts) {
  WriteHealthy(0, 100);
  Write(100, NAN);
  Finish();
  EXPECT_THAT(Sent(), testing::ElementsAre("firing nan@100", "resolved nan@100"));
  EXPECT_EQ(All()[0].annotations.at("resolution"), "run finished");
}

TEST_F(AlertManagerTest, StalledFromTheServerClockAndResolvedByTheNextStep) {
  WriteHealthy(0, 100);  // record times kT0 .. kT0 + 99, arriving at server time kT0 + 1000
  clock_.Advance(299);
  clock_.AwaitWaiters(1);  // the alert thread ran its stall check at the new time
  EXPECT_THAT(Sent(), testing::IsEmpty());
  clock_.Advance(2);  // 301 s after the last step, on the writer's clock
  clock_.AwaitWaiters(1);
  EXPECT_THAT(Sent(), testing::ElementsAre("firing stalled@99"));
  Write(400, 1.0);
  EXPECT_THAT(Sent(), testing::ElementsAre("firing stalled@99", "resolved stalled@99"));
  EXPECT_EQ(All()[0].resolved_step, 400);
}

TEST_F(AlertManagerTest, ListFiltersByRunStatusAndId) {
  WriteHealthy(0, 100);
  Write(100, NAN);
  for (int64_t s = 0; s < 100; ++s) Write(s, 1.0, "r2");
  Write(100, NAN, "r2");
  WriteHealthy(101, 120);  // r1 resolves
  Sent();
  EXPECT_EQ(All().size(), 2u);
  AlertQuery of_r2;
  of_r2.run = "r2";
  auto r2 = manager_->List(of_r2);
  ASSERT_EQ(r2.size(), 1u);
  EXPECT_EQ(r2[0].run, "r2");
  AlertQuery active_only;
  active_only.active_only = true;
  auto active = manager_->List(active_only);
  ASSERT_EQ(active.size(), 1u);
  EXPECT_EQ(active[0].run, "r2");
  AlertQuery newer;
  newer.after_id = active[0].id;
  EXPECT_EQ(manager_->List(newer).size(), 0u);
  AlertQuery newest;
  newest.limit = 1;
  EXPECT_EQ(manager_->List(newest)[0].id, 2u);  // newest first
}

}  // namespace
}  // namespace trainwatch::alerting

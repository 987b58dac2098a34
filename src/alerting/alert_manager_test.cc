#include "alerting/alert_manager.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

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
      if (refuse_) return Status::ResourceExhausted("no space left on device");
      sent_.push_back(n.status + " " + n.kind + "@" + std::to_string(n.step));
      last_ = n;
      return Status::Ok();
    });
    manager_->SetSharedOpsListener([this](const SharedAlertOp& op) {
      MutexLock lock(mu_);
      shared_.push_back(op);
    });
    manager_->SetChangeListener([this](const AlertRecord& a) {
      MutexLock lock(mu_);
      ++changes_;
    });
    if (cluster_) {
      ClusterGate gate;
      gate.owns = [this](const std::string& project, const std::string& run) {
        MutexLock lock(mu_);
        return owned_;
      };
      gate.delivered = [this](const std::string& key) -> Result<bool> {
        MutexLock lock(mu_);
        if (record_unreachable_) return Status::Unavailable("no NATS");
        return delivered_.count(key) > 0;
      };
      manager_->SetClusterGate(std::move(gate));
    }
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
  // A batch of rank `rank` of distributed run `run` (world size 4, host node<rank/2>): one row at
  // `step` (none when step < 0) and a heartbeat when `heartbeat` > 0.
  void WriteRank(uint32_t rank, int64_t step, double loss, double heartbeat = 0,
                 const std::string& run = "ddp") {
    v1::WriteRequest request;
    v1::RunBatch* batch = request.add_runs();
    batch->set_project("p");
    batch->set_run(run);
    batch->mutable_rank()->set_rank(rank);
    batch->mutable_rank()->set_world_size(4);
    batch->mutable_rank()->set_local_rank(rank % 2);
    batch->mutable_rank()->set_host("node" + std::to_string(rank / 2));
    if (step >= 0) {
      batch->add_steps(step);
      batch->add_times(kT0 + static_cast<double>(step));
      v1::MetricColumn* column = batch->add_metrics();
      column->set_name("loss");
      column->add_values(loss);
    }
    if (heartbeat > 0) batch->mutable_heartbeat()->set_interval_seconds(heartbeat);
    manager_->OnCommit(request);
  }
  // A silence of project p's nan alerts for an hour.
  Result<Silence> SilenceNanOfProjectP() {
    Silence s;
    s.project = "p";
    s.kind = "nan";
    s.ends_at = clock_.NowUnixSeconds() + 3600;
    return manager_->AddSilence(s);
  }
  std::vector<SharedAlertOp> Shared() {
    MutexLock lock(mu_);
    return shared_;
  }
  void Refuse(bool refuse) {
    MutexLock lock(mu_);
    refuse_ = refuse;
  }
  std::vector<std::string> Sent() {
    manager_->Flush();
    MutexLock lock(mu_);
    return sent_;
  }
  std::vector<AlertRecord> All() { return manager_->List(AlertQuery{}); }
  std::vector<AlertRecord> OfRun(const std::string& run) {
    AlertQuery query;
    query.run = run;
    return manager_->List(query);
  }

  test::TempDir dir_;
  ManualClock clock_{kT0 + 1000};
  Logger logger_{LogLevel::kError};
  MetricsRegistry metrics_;
  std::unique_ptr<AlertManager> manager_;
  Mutex mu_;
  std::vector<std::string> sent_ TW_GUARDED_BY(mu_);
  notify::Notification last_ TW_GUARDED_BY(mu_);
  int changes_ TW_GUARDED_BY(mu_) = 0;
  bool refuse_ TW_GUARDED_BY(mu_) = false;                // the outbox refuses (a full disk)
  std::vector<SharedAlertOp> shared_ TW_GUARDED_BY(mu_);  // told to the shared-ops listener
  // Cluster mode (ClusterGate): whether this "node" owns run p/r1, and the notified record.
  bool cluster_ = false;
  bool owned_ TW_GUARDED_BY(mu_) = false;
  bool record_unreachable_ TW_GUARDED_BY(mu_) = false;
  std::set<std::string> delivered_ TW_GUARDED_BY(mu_);
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
  auto added = SilenceNanOfProjectP();
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

// Cluster mode shares silences and acknowledgements (docs/cluster.md): what the API does is told to
// the listener with the cluster-wide identities (a silence's uid, an alert's incident id), and what
// another node did is applied, idempotently, without being told again.
TEST_F(AlertManagerTest, SilencesAndAcknowledgementsAreSharedByUidAndIncident) {
  auto added = SilenceNanOfProjectP();
  ASSERT_TRUE(added.ok()) << added.status().ToString();
  EXPECT_EQ(added->uid.size(), 32u);
  ASSERT_TRUE(manager_->ExpireSilence(added->id).ok());
  WriteHealthy(0, 100);
  Write(100, NAN);
  EXPECT_THAT(Sent(), testing::ElementsAre("firing nan@100"));
  const uint64_t alert_id = All()[0].id;
  ASSERT_TRUE(manager_->Acknowledge(alert_id, true, "ana").ok());
  auto told = Shared();
  ASSERT_EQ(told.size(), 3u);
  EXPECT_EQ(told[0].Key(), "silence." + added->uid);
  EXPECT_EQ(told[0].silence.id, 0u) << "ids are each node's own";
  EXPECT_EQ(told[1].Key(), told[0].Key());
  EXPECT_LE(told[1].silence.ends_at, clock_.NowUnixSeconds()) << "expired";
  EXPECT_EQ(told[2].Key(), "ack." + All()[0].IncidentId());
  EXPECT_TRUE(told[2].acknowledged);
  EXPECT_EQ(told[2].by, "ana");
  for (const SharedAlertOp& op : told) {
    auto back = SharedAlertOp::FromJson(op.ToJson());
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->ToJson(), op.ToJson());
  }

  // Another node's silence: added once with a local id, then updated by its uid (expired).
  Silence other;
  other.uid = Silence::NewUid();
  other.project = "p";
  other.run = "r2";
  other.starts_at = clock_.NowUnixSeconds();
  other.ends_at = clock_.NowUnixSeconds() + 600;
  SharedAlertOp op;
  op.silence = other;
  ASSERT_TRUE(manager_->ApplyShared(op).ok());
  ASSERT_TRUE(manager_->ApplyShared(op).ok());
  auto active = manager_->Silences(false);
  ASSERT_EQ(active.size(), 1u);
  EXPECT_EQ(active[0].uid, other.uid);
  EXPECT_NE(active[0].id, added->id);
  Write(0, NAN, "r2");
  EXPECT_THAT(Sent(), testing::ElementsAre("firing nan@100")) << "silenced by the shared silence";
  op.silence.ends_at = clock_.NowUnixSeconds();
  ASSERT_TRUE(manager_->ApplyShared(op).ok());
  EXPECT_THAT(manager_->Silences(false), testing::IsEmpty());
  EXPECT_EQ(manager_->Silences(true).size(), 2u);

  // Another node's acknowledgement: of an incident not detected here yet, then of one that is.
  SharedAlertOp ack;
  ack.kind = SharedAlertOp::Kind::kAck;
  ack.incident_id = "no-such-incident";
  ack.acknowledged = true;
  EXPECT_EQ(manager_->ApplyShared(ack).code(), StatusCode::kNotFound);
  ASSERT_EQ(All()[0].run, "r2");  // newest first
  ack.incident_id = All()[0].IncidentId();
  ack.by = "bo";
  ack.at = clock_.NowUnixSeconds();
  ASSERT_TRUE(manager_->ApplyShared(ack).ok());
  EXPECT_TRUE(All()[0].acknowledged);
  EXPECT_EQ(All()[0].acknowledged_by, "bo");
  EXPECT_EQ(All()[1].acknowledged_by, "ana");
  EXPECT_EQ(Shared().size(), 3u) << "what was applied is not told again";
  EXPECT_FALSE(SharedAlertOp::FromJson("{\"neither\": 1}").ok());
  EXPECT_FALSE(SharedAlertOp::FromJson("not json").ok());
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

// The outbox refuses a notification (its disk is full): the alert is recorded at once and its
// notification is queued at the first stall check after the disk takes writes again, once.
TEST_F(AlertManagerTest, ARefusedNotificationIsQueuedOnceTheOutboxTakesItAgain) {
  Refuse(true);
  WriteHealthy(0, 100);
  Write(100, NAN);
  EXPECT_THAT(Sent(), testing::IsEmpty());
  ASSERT_EQ(All().size(), 1u);
  EXPECT_EQ(All()[0].status, AlertStatus::kFiring);
  clock_.Advance(1);
  clock_.AwaitWaiters(1);  // a retry, refused again
  EXPECT_THAT(Sent(), testing::IsEmpty());
  Refuse(false);
  clock_.Advance(1);
  clock_.AwaitWaiters(1);
  EXPECT_THAT(Sent(), testing::ElementsAre("firing nan@100"));
  clock_.Advance(1);
  clock_.AwaitWaiters(1);
  EXPECT_THAT(Sent(), testing::ElementsAre("firing nan@100")) << "queued once";
  // A refused resolution is retried the same way.
  Refuse(true);
  Finish();
  EXPECT_THAT(Sent(), testing::ElementsAre("firing nan@100"));
  Refuse(false);
  clock_.Advance(1);
  clock_.AwaitWaiters(1);
  EXPECT_THAT(Sent(), testing::ElementsAre("firing nan@100", "resolved nan@100"));
}

TEST_F(AlertManagerTest, ANotificationRefusedBeforeARestartIsQueuedAfterIt) {
  Refuse(true);
  WriteHealthy(0, 100);
  Write(100, NAN);
  EXPECT_THAT(Sent(), testing::IsEmpty());
  Close();
  Refuse(false);
  Open();
  clock_.AwaitWaiters(1);  // the alert thread started and went idle
  EXPECT_THAT(Sent(), testing::ElementsAre("firing nan@100"));
  clock_.Advance(1);
  clock_.AwaitWaiters(1);
  EXPECT_THAT(Sent(), testing::ElementsAre("firing nan@100")) << "queued once";
}

// A refused firing that resolves before the outbox takes writes again is news to no receiver.
TEST_F(AlertManagerTest, ARefusedFiringResolvedMeanwhileIsNotSent) {
  Refuse(true);
  WriteHealthy(0, 100);
  Write(100, NAN);
  Finish();
  EXPECT_THAT(Sent(), testing::IsEmpty());
  Refuse(false);
  clock_.Advance(1);
  clock_.AwaitWaiters(1);
  EXPECT_THAT(Sent(), testing::IsEmpty());
}

TEST_F(AlertManagerTest, OtherRanksRowsDoNotFeedTheRunLevelDetectors) {
  // Four ranks, each with its own loss level: interleaved they would look like a loss jumping 4x
  // every record.
  for (int64_t s = 0; s < 300; ++s) {
    for (uint32_t r = 0; r < 4; ++r)
      WriteRank(r, s, (1.0 + r) * (1.0 + 0.01 * static_cast<double>(s % 3)));
  }
  EXPECT_THAT(Sent(), testing::IsEmpty());
  // A NaN on rank 3 only: the run's nan, attributed to rank 3 and its host.
  for (uint32_t r = 0; r < 4; ++r) WriteRank(r, 300, r == 3 ? NAN : 1.0);
  EXPECT_THAT(Sent(), testing::ElementsAre("firing nan@300"));
  auto all = All();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].rank, 3);
  EXPECT_EQ(all[0].host, "node1");
  EXPECT_EQ(all[0].labels.at("ranks"), "3");
  {
    MutexLock lock(mu_);
    EXPECT_EQ(last_.labels.at("rank"), "3");
    EXPECT_EQ(last_.labels.at("host"), "node1");
  }
  EXPECT_EQ(all[0].ToJson()["rank"], 3);
  EXPECT_EQ(all[0].ToJson()["host"], "node1");
  auto back = AlertRecord::FromJson(all[0].ToJson());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->Fingerprint(), all[0].Fingerprint());
  for (int64_t s = 301; s < 320; ++s) {
    for (uint32_t r = 0; r < 4; ++r) WriteRank(r, s, 1.0);
  }
  EXPECT_THAT(Sent(), testing::ElementsAre("firing nan@300", "resolved nan@300"));
}

TEST_F(AlertManagerTest, ARankThatFinishesDoesNotEndTheRun) {
  for (int64_t s = 0; s < 10; ++s) {
    for (uint32_t r = 0; r < 2; ++r) WriteRank(r, s, 1.0);
  }
  v1::WriteRequest request;
  v1::RunBatch* batch = request.add_runs();
  batch->set_project("p");
  batch->set_run("ddp");
  batch->mutable_rank()->set_rank(1);
  batch->mutable_metadata()->set_status("finished");
  manager_->OnCommit(request);
  WriteRank(0, 10, NAN);  // the run still watched: its nan fires
  EXPECT_THAT(Sent(), testing::ElementsAre("firing nan@10"));
}

TEST_F(AlertManagerTest, RankDeadThenTheCollectiveHangItCausedOnTheServerClock) {
  Close();
  AlertManagerOptions options;
  options.stall_check_interval_seconds = 0.01;
  options.resend_interval_seconds = 1e6;  // no reminders of the firing alerts in Sent()
  Open(options);
  auto of_kind = [&](const std::string& kind) {
    AlertQuery q;
    q.kind = kind;
    return manager_->List(q);
  };
  for (int64_t s = 0; s < 50; ++s) {
    for (uint32_t r = 0; r < 4; ++r) WriteRank(r, s, 1.0, s == 0 ? 1.0 : 0);
    clock_.Advance(0.1);
  }
  // Rank 2 falls silent after step 49; the others hang in the next all-reduce and send
  // heartbeats (interval 1 s) once a second.
  auto beat = [&] {
    for (uint32_t r : {0u, 1u, 3u}) WriteRank(r, -1, 0, 1.0);
    manager_->Flush();  // detected before the clock moves on
    clock_.Advance(1);
    clock_.AwaitWaiters(1);
  };
  for (int i = 0; i < 2; ++i) beat();
  EXPECT_THAT(Sent(), testing::IsEmpty());
  beat();  // 3 heartbeat intervals without anything from rank 2
  EXPECT_THAT(Sent(), testing::ElementsAre("firing rank_dead@49"));
  auto dead = of_kind("rank_dead");
  ASSERT_EQ(dead.size(), 1u);
  EXPECT_EQ(dead[0].rank, 2);
  EXPECT_EQ(dead[0].host, "node1");
  EXPECT_EQ(dead[0].severity, "critical");
  while (of_kind("collective_hang").empty()) {
    ASSERT_LT(clock_.NowUnixSeconds(), kT0 + 1000 + 200) << "no collective_hang";
    beat();
  }
  auto hang = of_kind("collective_hang");
  EXPECT_EQ(hang[0].rank, -1);
  EXPECT_EQ(hang[0].step, 49);
  EXPECT_GE(hang[0].value, 120);  // hang_floor
  EXPECT_LT(hang[0].value, 122);
  EXPECT_EQ(hang[0].labels.at("caused_by"), "rank_dead");
  EXPECT_EQ(hang[0].labels.at("cause_rank"), "2");
  // Rank 2 is back and every rank steps again: both resolve.
  WriteRank(2, 50, 1.0, 1.0);
  for (uint32_t r : {0u, 1u, 3u}) WriteRank(r, 50, 1.0);
  EXPECT_THAT(Sent(), testing::ElementsAre("firing rank_dead@49", "firing collective_hang@49",
                                           "resolved collective_hang@49", "resolved rank_dead@49"));
}

// Cluster mode: every node detects, the owner alone notifies (docs/cluster.md).

class ClusterAlertManagerTest : public AlertManagerTest {
 protected:
  void SetUp() override {
    cluster_ = true;
    AlertManagerTest::SetUp();
  }
  void SetOwned(bool owned) {
    MutexLock lock(mu_);
    owned_ = owned;
  }
  void TakeOver() {
    SetOwned(true);
    manager_->RequestTakeOver();
    manager_->Flush();
  }
  double CounterValue(const std::string& name) {
    std::string text = metrics_.Render();
    size_t at = text.find("\n" + name + " ");
    return at == std::string::npos ? -1 : std::stod(text.substr(at + name.size() + 2));
  }
};

TEST_F(ClusterAlertManagerTest, ANonOwnerDetectsQuietlyAndNotifiesOnceWhenItTakesOver) {
  WriteHealthy(0, 100);
  Write(100, NAN);
  EXPECT_THAT(Sent(), testing::IsEmpty());
  auto all = All();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].status, AlertStatus::kFiring);  // the same alert state as the owner's
  EXPECT_EQ(all[0].notified, "");
  TakeOver();
  EXPECT_THAT(Sent(), testing::ElementsAre("firing nan@100"));
  EXPECT_EQ(CounterValue("trainwatch_alerts_takeover_notified_total"), 1);
  {
    MutexLock lock(mu_);
    EXPECT_EQ(last_.idempotency_key, all[0].IdempotencyKey("firing"));
  }
  TakeOver();  // told already: nothing again
  WriteHealthy(101, 120);
  EXPECT_THAT(Sent(), testing::ElementsAre("firing nan@100", "resolved nan@100"));
}

TEST_F(ClusterAlertManagerTest, WhatAnotherNodeDeliveredIsNotSentAgainButItsResolutionIs) {
  WriteHealthy(0, 100);
  Write(100, NAN);
  Sent();
  const AlertRecord alert = All().at(0);
  {
    MutexLock lock(mu_);
    delivered_.insert(alert.IdempotencyKey("firing"));  // the old owner's delivery
  }
  TakeOver();
  EXPECT_THAT(Sent(), testing::IsEmpty());
  EXPECT_EQ(CounterValue("trainwatch_alerts_takeover_known_total"), 1);
  EXPECT_EQ(CounterValue("trainwatch_alerts_takeover_notified_total"), 0);
  EXPECT_EQ(All().at(0).notified, "firing");
  WriteHealthy(101, 120);
  EXPECT_THAT(Sent(), testing::ElementsAre("resolved nan@100"));
}

TEST_F(ClusterAlertManagerTest, AResolutionIsSentOnTakeOverOnlyIfTheFiringWasDelivered) {
  for (const std::string run : {"r1", "r2"}) {
    for (int64_t step = 0; step < 120; ++step)
      Write(step, step == 100 ? NAN : 1.0 + 0.01 * static_cast<double>(step % 3), run);
  }
  Sent();
  const AlertRecord r1 = OfRun("r1").at(0);
  ASSERT_EQ(r1.status, AlertStatus::kResolved);
  {
    MutexLock lock(mu_);
    delivered_.insert(r1.IdempotencyKey("firing"));  // the old owner told r1's firing, not r2's
  }
  TakeOver();
  EXPECT_THAT(Sent(), testing::ElementsAre("resolved nan@100"));
  {
    MutexLock lock(mu_);
    EXPECT_EQ(last_.run, "r1");
  }
  TakeOver();
  EXPECT_THAT(Sent(), testing::ElementsAre("resolved nan@100"));
}

TEST_F(ClusterAlertManagerTest, AnOwnerAsksTheRecordAndNotifiesWhenItCannotBeRead) {
  SetOwned(true);
  {
    MutexLock lock(mu_);
    record_unreachable_ = true;  // a duplicate rather than a loss
  }
  WriteHealthy(0, 100);
  Write(100, NAN);
  EXPECT_THAT(Sent(), testing::ElementsAre("firing nan@100"));
}

TEST_F(AlertManagerTest, TheIdempotencyKeyComesFromTheIncidentNotTheAlertId) {
  Write(0, NAN, "other");  // takes alert id 1 on this node only
  WriteHealthy(0, 100);
  Write(100, NAN);
  WriteHealthy(101, 120);
  Sent();
  const AlertRecord alert = OfRun("r1").at(0);
  EXPECT_EQ(alert.id, 2u);
  EXPECT_EQ(alert.first_step, 100);
  const std::string firing =
      notify::IdempotencyKey(notify::IncidentId("p\x1fr1\x1fnan\x1fnan", 100), "firing");
  EXPECT_EQ(alert.IdempotencyKey("firing"), firing);
  EXPECT_THAT(firing, testing::MatchesRegex("[0-9a-f]{32}-firing"));
  MutexLock lock(mu_);
  EXPECT_EQ(last_.idempotency_key, alert.IdempotencyKey("resolved"));
  EXPECT_NE(last_.idempotency_key, firing);
  // Kept in the store: the same key after a restart, and old records take their step.
  auto back = AlertRecord::FromJson(alert.ToJson());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->IdempotencyKey("firing"), firing);
  nlohmann::json old = alert.ToJson();
  old.erase("first_step");
  old["step"] = 100;
  EXPECT_EQ(AlertRecord::FromJson(old)->first_step, 100);
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

// Scenario tests of the rank detectors: simulated distributed runs whose ranks log every step and
// send their rows in batches (each rank on its own schedule, so rows of one step arrive out of
// order across ranks), with a check once a simulated second, as the server's alert thread does.
#include "detect/rank_detector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace trainwatch::detect {
namespace {

constexpr double kT0 = 1.8e9;

// What one rank logs at one step; NaN leaves the metric out.
struct RowValues {
  double ttc = NAN;
  double param_norm = NAN;
  double loss = 1.0;
};

struct SimOptions {
  int ranks = 8;
  int64_t steps = 1500;
  double step_seconds = 0.2;
  int64_t batch_rows = 3;  // rows per batch of one rank (about 0.6 s)
  double heartbeat = 10;   // heartbeat interval of every rank (0: none)
  bool param_norm_every_step = false;
};

// A run of `ranks` ranks in lockstep. `values(rank, step)` gives what a rank logs; `alive(rank,
// step)` whether it still logs that step; `stopped_at` ends every rank's steps (a hang) while
// heartbeats go on until `end_time`.
class Simulation {
 public:
  explicit Simulation(SimOptions sim, DetectorOptions options = {})
      : sim_(sim), options_(std::move(options)), detector_(run_, options_) {}

  std::function<RowValues(int rank, int64_t step)> values;
  std::function<bool(int rank, int64_t step)> alive = [](int, int64_t) { return true; };
  std::function<bool(int rank, double time)> heartbeating = [](int, double) { return true; };
  std::function<int64_t(int rank, int64_t step)> logged_step = [](int, int64_t step) {
    return step;
  };
  int64_t stop_all_at = -1;  // no step from this one on (a hang)
  double end_time = 0;       // simulate until here (0: the last step's time + 1 s)

  void Run() {
    struct Event {
      double time;
      int kind;  // 0 batch, 1 heartbeat
      int rank;
      std::vector<int64_t> steps;
    };
    std::vector<Event> events;
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> delay(0.01, 0.2);
    const int64_t last = stop_all_at >= 0 ? stop_all_at : sim_.steps;
    for (int r = 0; r < sim_.ranks; ++r) {
      std::vector<int64_t> pending;
      for (int64_t s = 0; s < last; ++s) {
        if (!alive(r, s)) break;
        pending.push_back(s);
        if (static_cast<int64_t>(pending.size()) == sim_.batch_rows) {
          events.push_back(Event{StepTime(r, pending.back()) + delay(rng), 0, r, pending});
          pending.clear();
        }
      }
      if (!pending.empty())
        events.push_back(Event{StepTime(r, pending.back()) + delay(rng), 0, r, pending});
    }
    const double end =
        end_time > 0 ? end_time : kT0 + static_cast<double>(sim_.steps) * sim_.step_seconds + 1;
    if (sim_.heartbeat > 0) {
      for (int r = 0; r < sim_.ranks; ++r) {
        for (double t = kT0 + 0.1 * r; t < end; t += sim_.heartbeat) {
          if (heartbeating(r, t)) events.push_back(Event{t, 1, r, {}});
        }
      }
    }
    std::stable_sort(events.begin(), events.end(),
                     [](const Event& a, const Event& b) { return a.time < b.time; });
    double next_check = kT0 + 1;
    for (const Event& e : events) {
      while (next_check <= e.time) {
        detector_.Check(next_check, &alerts_);
        next_check += 1;
      }
      Deliver(e.rank, e.steps, e.time, e.kind == 1 ? sim_.heartbeat : 0);
    }
    for (; next_check <= end; next_check += 1) detector_.Check(next_check, &alerts_);
  }

  // "kind@step/rank" of each firing.
  std::vector<std::string> Fired() const { return Describe(AlertState::kFiring); }
  std::vector<std::string> Resolved() const { return Describe(AlertState::kResolved); }
  const std::vector<Alert>& alerts() const { return alerts_; }
  const Alert* First(const std::string& kind) const {
    for (const Alert& a : alerts_) {
      if (a.state == AlertState::kFiring && a.kind == kind) return &a;
    }
    return nullptr;
  }

  double StepTime(int rank, int64_t step) const {
    // Lockstep: every rank ends a step within a few ms of the others.
    return kT0 + static_cast<double>(step) * sim_.step_seconds + 0.003 * rank;
  }

 private:
  void Deliver(int rank, const std::vector<int64_t>& steps, double arrival, double heartbeat) {
    RankId id;
    id.rank = static_cast<uint32_t>(rank);
    id.world_size = static_cast<uint32_t>(sim_.ranks);
    id.local_rank = static_cast<uint32_t>(rank % 4);
    host_ = "node" + std::to_string(rank / 4);
    id.host = host_;
    for (int64_t s : steps) {
      RowValues v = values ? values(rank, s) : RowValues{};
      std::vector<std::pair<std::string_view, double>> metrics;
      metrics.emplace_back("loss", v.loss);
      if (!std::isnan(v.ttc)) metrics.emplace_back("dist/time_to_collective", v.ttc);
      if (!std::isnan(v.param_norm)) metrics.emplace_back("param_norm", v.param_norm);
      detector_.Observe(id, logged_step(rank, s), StepTime(rank, s), arrival, metrics, &alerts_);
    }
    detector_.Heard(id, arrival, heartbeat, &alerts_);
  }

  std::vector<std::string> Describe(AlertState state) const {
    std::vector<std::string> out;
    for (const Alert& a : alerts_) {
      if (a.state == state)
        out.push_back(a.kind + "@" + std::to_string(a.step) + "/" + std::to_string(a.rank));
    }
    return out;
  }

  SimOptions sim_;
  const std::string run_ = "run";
  DetectorOptions options_;
  RankDetector detector_;
  std::string host_;
  std::vector<Alert> alerts_;
};

// Healthy ranks: time to the first collective about 80 ms, jittering by 25% (log-normal), a
// slow batch now and then (3x on 1% of the steps, on any rank), and a rank whose loader is a
// little slower all along (1.2x).
std::function<RowValues(int, int64_t)> Healthy(uint32_t seed) {
  auto rng = std::make_shared<std::mt19937>(seed);
  return [rng](int rank, int64_t step) {
    std::lognormal_distribution<double> jitter(0, 0.25);
    std::uniform_real_distribution<double> u(0, 1);
    double ttc = 0.08 * jitter(*rng) * (rank == 5 ? 1.2 : 1.0);
    if (u(*rng) < 0.01) ttc *= 3;
    RowValues v;
    v.ttc = ttc;
    v.param_norm = 100 + 0.01 * static_cast<double>(step);  // identical on every rank (DDP)
    v.loss = 2.0 / (1 + 0.01 * static_cast<double>(step)) *
             (1 + 0.1 * u(*rng));  // each rank's own batch
    return v;
  };
}

TEST(RankScenarios, HealthyJitteryRunsRaiseNothing) {
  for (uint32_t seed : {1u, 2u, 3u, 4u}) {
    for (int ranks : {2, 3, 8, 32}) {
      SimOptions sim;
      sim.ranks = ranks;
      Simulation run(sim);
      run.values = Healthy(seed);
      run.Run();
      EXPECT_THAT(run.Fired(), testing::IsEmpty()) << "seed " << seed << ", " << ranks << " ranks";
    }
  }
}

TEST(RankScenarios, HealthyRunsWithoutHeartbeatsRaiseNothing) {
  SimOptions sim;
  sim.heartbeat = 0;
  Simulation run(sim);
  run.values = Healthy(9);
  run.Run();
  EXPECT_THAT(run.Fired(), testing::IsEmpty());
}

TEST(RankScenarios, ASlowDataLoaderMakesAStragglerWithin20Steps) {
  // Loader delays from 1.25x the healthy time to the first collective (80 ms) up.
  for (int ranks : {2, 4, 8, 32}) {
    for (double delay : {0.1, 0.15, 1.0}) {
      SimOptions sim;
      sim.ranks = ranks;
      Simulation run(sim);
      auto healthy = Healthy(11);
      const int slow = ranks - 1;
      run.values = [&](int rank, int64_t step) {
        RowValues v = healthy(rank, step);
        if (rank == slow && step >= 600 && step < 900) v.ttc += delay;
        return v;
      };
      run.Run();
      const std::string where = std::to_string(ranks) + " ranks, delay " + std::to_string(delay);
      ASSERT_THAT(run.Fired(), testing::ElementsAre(testing::StartsWith("straggler@"))) << where;
      const Alert* a = run.First("straggler");
      EXPECT_EQ(a->rank, slow) << where;
      EXPECT_EQ(a->host, "node" + std::to_string(slow / 4));
      EXPECT_EQ(a->metric, "dist/time_to_collective");
      EXPECT_THAT(a->message, testing::HasSubstr("rank " + std::to_string(slow)));
      EXPECT_GE(a->step, 600) << where;  // the onset
      EXPECT_LE(a->step, 605) << where;
      // Fired from the record of a step within 20 steps of the onset (straggler_persist = 6 at
      // the earliest).
      EXPECT_GE(a->time, run.StepTime(slow, 600 + 5)) << where;
      EXPECT_LT(a->time, run.StepTime(slow, 620)) << where;
      EXPECT_THAT(run.Resolved(), testing::ElementsAre(testing::StartsWith("straggler@9")))
          << where;
    }
  }
}

TEST(RankScenarios, WholeRanksAtOnceAsOfflineFilesGiveThemAreComparedToo) {
  // `trainwatch detect` on a file of JSON lines: one batch per rank, rank after rank. The ranks
  // said the world size: the comparisons wait for all four.
  SimOptions sim;
  sim.ranks = 4;
  sim.batch_rows = 1500;
  sim.heartbeat = 0;
  Simulation run(sim);
  auto healthy = Healthy(24);
  run.values = [&](int rank, int64_t step) {
    RowValues v = healthy(rank, step);
    if (rank == 2 && step >= 1000) v.ttc += 0.2;
    return v;
  };
  run.Run();
  EXPECT_THAT(run.Fired(), testing::ElementsAre(testing::StartsWith("straggler@100")));
}

TEST(RankScenarios, AStragglerIsNotJudgedOnOneSlowBatch) {
  Simulation run(SimOptions{});
  auto healthy = Healthy(12);
  run.values = [&](int rank, int64_t step) {
    RowValues v = healthy(rank, step);
    if (rank == 2 && step % 50 < 4) v.ttc += 0.5;  // 4 slow steps in a row, every 50 steps
    return v;
  };
  run.Run();
  EXPECT_THAT(run.Fired(), testing::IsEmpty());
}

TEST(RankScenarios, ARankLoggingOtherStepsIsDesynced) {
  Simulation run(SimOptions{});
  run.values = Healthy(13);
  // From step 400, rank 6's step counter runs 40 steps behind the others' (e.g. it resumed from an
  // older checkpoint).
  run.logged_step = [](int rank, int64_t step) {
    return rank == 6 && step >= 400 ? step - 40 : step;
  };
  run.Run();
  ASSERT_THAT(run.Fired(), testing::ElementsAre(testing::StartsWith("rank_desync@")));
  const Alert* a = run.First("rank_desync");
  EXPECT_EQ(a->rank, 6);
  EXPECT_EQ(a->host, "node1");
  EXPECT_GE(a->step, 360);
  EXPECT_LT(a->step, 380);
  EXPECT_THAT(a->message, testing::HasSubstr("behind"));
}

TEST(RankScenarios, ARankStuckWhileOthersGoOnIsDesyncedNotDead) {
  Simulation run(SimOptions{});
  run.values = Healthy(14);
  run.alive = [](int rank, int64_t step) { return rank != 1 || step < 500; };  // heartbeats go on
  run.Run();
  EXPECT_THAT(run.Fired(), testing::ElementsAre("rank_desync@499/1"));
}

TEST(RankScenarios, DivergingReplicasAreDesynced) {
  Simulation run(SimOptions{});
  auto healthy = Healthy(15);
  run.values = [&](int rank, int64_t step) {
    RowValues v = healthy(rank, step);
    if (rank == 3 && step >= 700) v.param_norm *= 1 + 1e-4 * static_cast<double>(step - 699);
    return v;
  };
  run.Run();
  ASSERT_THAT(run.Fired(), testing::ElementsAre("rank_desync@700/3"));
  EXPECT_EQ(run.First("rank_desync")->metric, "param_norm");
}

TEST(RankScenarios, ShardedNormsThatDifferFromTheStartAreNotReplicas) {
  Simulation run(SimOptions{});
  auto healthy = Healthy(16);
  run.values = [&](int rank, int64_t step) {
    RowValues v = healthy(rank, step);
    v.param_norm = 10 + rank + 0.001 * static_cast<double>(step);  // FSDP: each rank's shard
    return v;
  };
  run.Run();
  EXPECT_THAT(run.Fired(), testing::IsEmpty());
}

TEST(RankScenarios, ADeadRankThenTheHangItCaused) {
  SimOptions sim;
  sim.steps = 1000;
  Simulation run(sim);
  run.values = Healthy(17);
  // Rank 5 dies after step 599: nothing more from it, no heartbeats. The others hang in the
  // all-reduce of step 600 (their last logged step 599) and keep sending heartbeats.
  run.stop_all_at = 600;
  run.heartbeating = [&](int rank, double t) { return rank != 5 || t < run.StepTime(5, 599); };
  run.end_time = kT0 + 600 * 0.2 + 400;
  run.Run();
  ASSERT_THAT(run.Fired(), testing::ElementsAre("rank_dead@599/5", "collective_hang@599/-1"));
  const Alert* dead = run.First("rank_dead");
  EXPECT_EQ(dead->host, "node1");
  EXPECT_EQ(dead->severity, "critical");
  const Alert* hang = run.First("collective_hang");
  EXPECT_EQ(hang->labels.at("caused_by"), "rank_dead");
  EXPECT_EQ(hang->labels.at("cause_rank"), "5");
  EXPECT_EQ(hang->labels.at("cause_host"), "node1");
  // rank_dead after 3 heartbeat intervals (30 s), the hang after the 120 s floor.
  EXPECT_GE(dead->value, 30);
  EXPECT_LT(dead->value, 32);
  EXPECT_GE(hang->value, 120);
  EXPECT_LT(hang->value, 122);
}

TEST(RankScenarios, AHangWithEveryRankAliveAndItsEnd) {
  SimOptions sim;
  sim.steps = 1200;
  Simulation run(sim);
  run.values = Healthy(18);
  // Every rank stops at step 800 for 200 s (heartbeats go on), then goes on.
  run.stop_all_at = 800;
  run.end_time = kT0 + 800 * 0.2 + 200;
  run.Run();
  EXPECT_THAT(run.Fired(), testing::ElementsAre("collective_hang@799/-1"));
  EXPECT_TRUE(run.First("collective_hang")->labels.empty());
}

TEST(RankScenarios, ACheckpointPauseUnderTheFloorIsNoHang) {
  SimOptions sim;
  sim.steps = 900;
  Simulation run(sim);
  run.values = Healthy(19);
  run.stop_all_at = 900;
  run.end_time = kT0 + 900 * 0.2 + 100;  // 100 s without a step: under hang_floor
  run.Run();
  EXPECT_THAT(run.Fired(), testing::IsEmpty());
}

TEST(RankScenarios, WithoutHeartbeatsASilentJobIsNeitherDeadNorHung) {
  SimOptions sim;
  sim.heartbeat = 0;
  sim.steps = 500;
  Simulation run(sim);
  run.values = Healthy(20);
  run.stop_all_at = 500;
  run.end_time = kT0 + 500 * 0.2 + 600;
  run.Run();
  EXPECT_THAT(run.Fired(), testing::IsEmpty());  // `stalled` (run level) and liveness say it
}

TEST(RankScenarios, WithoutHeartbeatsARankThatStopsIsDeadAfterItsCadence) {
  SimOptions sim;
  sim.heartbeat = 0;
  Simulation run(sim);
  run.values = Healthy(21);
  run.alive = [](int rank, int64_t step) { return rank != 2 || step < 300; };
  run.Run();
  ASSERT_THAT(run.Fired(), testing::Contains("rank_dead@299/2"));
  const Alert* dead = run.First("rank_dead");
  EXPECT_GE(dead->value, 30);  // rank_dead_floor (10 x its 0.6 s batches is less)
  EXPECT_LT(dead->value, 32);
}

TEST(RankScenarios, NanIsAttributedToTheRankThatShowedItFirst) {
  SimOptions sim;
  sim.steps = 400;
  Simulation run(sim);
  auto healthy = Healthy(22);
  run.values = [&](int rank, int64_t step) {
    RowValues v = healthy(rank, step);
    // Rank 6's batch was bad at step 200; the all-reduce spreads it to every rank at step 201.
    if ((rank == 6 && step == 200) || (step >= 201 && step <= 203)) v.loss = NAN;
    return v;
  };
  run.Run();
  ASSERT_THAT(run.Fired(), testing::ElementsAre("nan@200/6"));
  const Alert* nan = run.First("nan");
  EXPECT_EQ(nan->metric, "loss");
  EXPECT_EQ(nan->labels.at("ranks"), "6");
  EXPECT_THAT(nan->message, testing::HasSubstr("rank 6 (node1)"));
  EXPECT_THAT(run.Resolved(), testing::ElementsAre(testing::StartsWith("nan@")));
}

TEST(RankScenarios, NanOnSeveralRanksAtOnceNamesThemAll) {
  SimOptions sim;
  sim.steps = 300;
  Simulation run(sim);
  auto healthy = Healthy(23);
  run.values = [&](int rank, int64_t step) {
    RowValues v = healthy(rank, step);
    if ((rank == 2 || rank == 5) && step == 150) v.loss = NAN;
    return v;
  };
  run.Run();
  ASSERT_THAT(run.Fired(), testing::ElementsAre("nan@150/2"));
  EXPECT_EQ(run.First("nan")->labels.at("ranks"), "2,5");
}

}  // namespace
}  // namespace trainwatch::detect

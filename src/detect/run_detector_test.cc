// Scenario tests: small synthetic runs in, alerts out, one per detector kind plus the false-positive
// traps of docs/design/anomaly-detection.md.
#include "detect/run_detector.h"

#include "detect/metric_bindings.h"
#include "detect/scenario_testing.h"

#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace trainwatch::detect {
namespace {

using scenarios::Metrics;
using scenarios::Scenario;

// A healthy run's record at `step`: decaying noisy loss, steady grad norms, constant lr.
class HealthyRun {
 public:
  explicit HealthyRun(uint32_t seed = 1) : rng_(seed) {}
  double Noise() { return static_cast<double>(rng_()) / 4294967296.0 - 0.5; }  // [-0.5, 0.5)

  Metrics At(int64_t step, double lr = 0.1) {
    double loss = (2.0 * std::exp(-static_cast<double>(step) / 500.0) + 0.5) * (1 + 0.05 * Noise());
    return {{"loss", loss},
            {"grad_norm", 1.0 * (1 + 0.2 * Noise())},
            {"grad_norm/layer1", 0.5 * (1 + 0.2 * Noise())},
            {"grad_norm/layer2", 0.7 * (1 + 0.2 * Noise())},
            {"grad_norm/layer3", 0.3 * (1 + 0.2 * Noise())},
            {"lr", lr},
            {"update_ratio", 1e-3 * (lr / 0.1) * (1 + 0.2 * Noise())}};
  }

 private:
  std::mt19937 rng_;
};

void Set(Metrics* m, const std::string& name, double value) {
  for (auto& [n, v] : *m) {
    if (n == name) {
      v = value;
      return;
    }
  }
  m->emplace_back(name, value);
}
void Erase(Metrics* m, const std::string& name) {
  std::erase_if(*m, [&](const auto& p) { return p.first == name; });
}

constexpr double kT0 = 1.7e9;

// Runs `steps` healthy records (1 s per step), letting `edit` change each record.
Scenario RunHealthy(int64_t steps, const std::function<void(int64_t, Metrics*)>& edit = nullptr,
             DetectorOptions options = {}) {
  Scenario sc(std::move(options));
  HealthyRun h;
  for (int64_t s = 0; s < steps; ++s) {
    Metrics m = h.At(s);
    if (edit) edit(s, &m);
    sc.Add(s, kT0 + static_cast<double>(s), m);
  }
  return sc;
}

TEST(RunDetectorTest, HealthyRunIsQuiet) {
  EXPECT_THAT(RunHealthy(3000).Summary(), testing::IsEmpty());
}

// ---- nan
TEST(RunDetectorTest, NanOncePerEpisodeAndDeadRunInhibitsTraining) {
  Scenario sc = RunHealthy(400, [](int64_t s, Metrics* m) {
    if (s >= 200 && s < 205) Set(m, "loss", NAN);
    if (s >= 205) Set(m, "loss", 1e6);  // a consequence of the dead run, not a new incident
  });
  EXPECT_THAT(sc.Summary(), testing::ElementsAre("nan@200"));
  EXPECT_EQ(sc.alerts()[0].metric, "loss");
  EXPECT_EQ(sc.alerts()[0].severity, "critical");
}

TEST(RunDetectorTest, IsolatedNonFiniteEventsEachAlert) {
  Scenario sc = RunHealthy(300, [](int64_t s, Metrics* m) {
    if (s == 100 || s == 200) Set(m, "grad_norm", INFINITY);
  });
  EXPECT_THAT(sc.Summary(), testing::ElementsAre("nan@100", "nan@200"));
}

TEST(RunDetectorTest, NanInValLossOnlyIsNotAnAlert) {
  Scenario sc = RunHealthy(1000, [](int64_t s, Metrics* m) {
    if (s % 10 == 0) m->emplace_back("val_loss", s % 30 == 0 ? NAN : 1.0);
  });
  EXPECT_THAT(sc.Summary(), testing::IsEmpty());
}

TEST(RunDetectorTest, EvalOnlyRecordBetweenNanRecordsDoesNotReArm) {
  Scenario sc;
  HealthyRun h;
  for (int64_t s = 0; s < 100; ++s) sc.Add(s, kT0 + s, h.At(s));
  Metrics bad = h.At(100);
  Set(&bad, "loss", NAN);
  sc.Add(100, kT0 + 100, bad);
  sc.Add(100, kT0 + 100.5, {{"val_loss", 1.0}});
  sc.Add(101, kT0 + 101, bad);
  EXPECT_THAT(sc.Summary(), testing::ElementsAre("nan@100"));
}

// ---- grad_explosion
TEST(RunDetectorTest, GradExplosionNeedsThreeOfFive) {
  Scenario sc = RunHealthy(400, [](int64_t s, Metrics* m) {
    if (s >= 300) Set(m, "grad_norm", 50.0);
  });
  EXPECT_THAT(sc.Summary(), testing::ElementsAre("grad_explosion@302"));
}

TEST(RunDetectorTest, SingleGradSpikeIsNotAnExplosion) {
  Scenario sc = RunHealthy(400, [](int64_t s, Metrics* m) {
    if (s == 300) Set(m, "grad_norm", 19.0);
  });
  EXPECT_THAT(sc.Summary(), testing::IsEmpty());
}

TEST(RunDetectorTest, GradExplosionAfterLrShockNeedsOneRecord) {
  Scenario sc = RunHealthy(400, [](int64_t s, Metrics* m) {
    if (s >= 300) Set(m, "lr", 1.0);
    if (s == 302) Set(m, "grad_norm", 20.0);
  });
  EXPECT_THAT(sc.Summary(), testing::ElementsAre("grad_explosion@302"));
}

// ---- grad_vanishing
TEST(RunDetectorTest, GradVanishingOnMedianLayerCollapse) {
  Scenario sc = RunHealthy(400, [](int64_t s, Metrics* m) {
    if (s >= 300) {
      Set(m, "grad_norm/layer1", 1e-8);
      Set(m, "grad_norm/layer2", 1e-9);
    }
  });
  EXPECT_THAT(sc.Summary(), testing::ElementsAre("grad_vanishing@304"));
}

TEST(RunDetectorTest, OneCollapsedLayerIsNotVanishing) {
  Scenario sc = RunHealthy(400, [](int64_t s, Metrics* m) {
    if (s >= 300) Set(m, "grad_norm/layer1", 1e-8);
  });
  EXPECT_THAT(sc.Summary(), testing::IsEmpty());
}

// ---- loss_spike
TEST(RunDetectorTest, LossSpikeAlertsOnRecovery) {
  Scenario sc = RunHealthy(400, [](int64_t s, Metrics* m) {
    if (s == 300) Set(m, "loss", 10.0);
    if (s == 300) Set(m, "grad_norm", 30.0);  // the corrupted batch's gradient spikes with it
  });
  EXPECT_THAT(sc.Summary(), testing::ElementsAre("loss_spike@301"));
}

TEST(RunDetectorTest, LevelShiftIsNotASpike) {
  Scenario sc = RunHealthy(400, [](int64_t s, Metrics* m) {
    if (s >= 300) Set(m, "loss", 10.0);  // stays up: candidates open and are dropped, never recover
  });
  EXPECT_THAT(sc.Kinds(), testing::Not(testing::Contains("loss_spike")));
}

TEST(RunDetectorTest, RenamedLossCtcLossIsFollowed) {
  Scenario sc = RunHealthy(400, [](int64_t s, Metrics* m) {
    double loss = m->front().second;
    Erase(m, "loss");
    m->emplace_back("val_ctc_loss", 1.0);  // an eval metric: never the train loss
    m->emplace_back("ctc_loss", s == 300 ? 10.0 : loss);
  });
  EXPECT_THAT(sc.Summary(), testing::ElementsAre("loss_spike@301"));
  EXPECT_EQ(sc.alerts()[0].metric, "ctc_loss");
}

// ---- loss_oscillation and divergence after an lr shock
TEST(RunDetectorTest, OscillationAfterLrShock) {
  Scenario sc = RunHealthy(600, [](int64_t s, Metrics* m) {
    if (s >= 200) {
      Set(m, "lr", 1.0);
      Set(m, "loss", 0.8 * std::exp(s % 2 == 0 ? 0.5 : -0.5));
    }
  });
  EXPECT_THAT(sc.Summary(), testing::ElementsAre("loss_oscillation@300"));
}

TEST(RunDetectorTest, DivergenceAfterLrShock) {
  Scenario sc = RunHealthy(600, [](int64_t s, Metrics* m) {
    if (s >= 200) {
      Set(m, "lr", 1.0);
      Set(m, "loss", 0.8 * std::exp(static_cast<double>(s - 200) / 100.0));
    }
  });
  // Classified once the smoothed loss has doubled over its level at the shock (age >= 150).
  ASSERT_THAT(sc.Kinds(), testing::ElementsAre("divergence"));
  EXPECT_GE(sc.alerts()[0].step, 350);
  EXPECT_LE(sc.alerts()[0].step, 500);
}

// ---- divergence without lr
TEST(RunDetectorTest, GenericDivergence) {
  Scenario sc = RunHealthy(1000, [](int64_t s, Metrics* m) {
    Erase(m, "lr");
    if (s >= 300) Set(m, "loss", 0.9 * std::exp(static_cast<double>(s - 300) / 150.0));
  });
  ASSERT_THAT(sc.Kinds(), testing::ElementsAre("divergence"));
  EXPECT_GT(sc.alerts()[0].step, 400);
  EXPECT_LT(sc.alerts()[0].step, 700);
}

// ---- plateau
TEST(RunDetectorTest, PlateauWhenUpdatesStopAtNormalLr) {
  Scenario sc = RunHealthy(500, [](int64_t s, Metrics* m) {
    if (s >= 300) Set(m, "update_ratio", 1e-7);
  });
  EXPECT_THAT(sc.Summary(), testing::ElementsAre("plateau@309"));
}

TEST(RunDetectorTest, PlateauFromLrStepDropWithoutUpdateRatio) {
  Scenario sc = RunHealthy(500, [](int64_t s, Metrics* m) {
    Erase(m, "update_ratio");
    if (s >= 300) Set(m, "lr", 1e-5);
  });
  EXPECT_THAT(sc.Summary(), testing::ElementsAre("plateau@309"));
}

TEST(RunDetectorTest, GradualLrDecayIntoTinyUpdatesIsNotAPlateau) {
  Scenario sc = RunHealthy(3000, [](int64_t s, Metrics* m) {
    double lr = 0.1 * 0.5 * (1 + std::cos(M_PI * static_cast<double>(s) / 3000.0));
    Set(m, "lr", lr);
    Set(m, "update_ratio", 1e-3 * lr / 0.1);
  });
  EXPECT_THAT(sc.Summary(), testing::IsEmpty());
}

// ---- overfitting
TEST(RunDetectorTest, OverfittingWhenEvalTurnsUpWhileTrainFalls) {
  Scenario sc = RunHealthy(900, [](int64_t s, Metrics* m) {
    Set(m, "loss", 2.0 * std::exp(-static_cast<double>(s) / 300.0));
    if (s % 10 == 0) {
      double v = s <= 500 ? 1.5 * std::exp(-static_cast<double>(s) / 1000.0)
                          : 1.5 * std::exp(-0.5) * std::pow(1.05, static_cast<double>(s - 500) / 10.0);
      m->emplace_back("val_loss", v);
    }
  });
  ASSERT_THAT(sc.Kinds(), testing::ElementsAre("overfitting"));
  EXPECT_GT(sc.alerts()[0].step, 500);
  EXPECT_LE(sc.alerts()[0].step, 570);
  EXPECT_EQ(sc.alerts()[0].severity, "info");
}

// ---- stalled
TEST(RunDetectorTest, StalledOfflineAtTheLastStepBeforeTheGap) {
  Scenario sc;
  HealthyRun h;
  for (int64_t s = 0; s < 300; ++s) sc.Add(s, kT0 + s + (s > 100 ? 1000 : 0), h.At(s));
  EXPECT_THAT(sc.Summary(), testing::ElementsAre("stalled@100"));
  EXPECT_NEAR(sc.alerts()[0].value, 1001, 1e-6);
}

TEST(RunDetectorTest, StalledOnlineFromTheCallersClockOncePerGap) {
  Scenario sc;
  HealthyRun h;
  for (int64_t s = 0; s <= 100; ++s) sc.Add(s, kT0 + s, h.At(s));
  sc.CheckStalled(kT0 + 100 + 299);
  EXPECT_THAT(sc.Summary(), testing::IsEmpty());
  sc.CheckStalled(kT0 + 100 + 301);
  sc.CheckStalled(kT0 + 100 + 600);
  sc.Add(101, kT0 + 100 + 700, h.At(101));
  EXPECT_THAT(sc.Summary(), testing::ElementsAre("stalled@100"));
  // Re-armed by the new step.
  sc.CheckStalled(kT0 + 100 + 700 + 301);
  EXPECT_THAT(sc.Summary(), testing::ElementsAre("stalled@100", "stalled@101"));
}

TEST(RunDetectorTest, EvalPausesInStepTimesAreNotStallsOrSlowdowns) {
  Scenario sc;
  HealthyRun h;
  double t = kT0;
  for (int64_t s = 0; s < 3000; ++s) {
    t += (s % 50 == 0 && s > 0) ? 120.0 : 1.0;  // an eval every 50 steps takes 2 minutes
    Metrics m = h.At(s);
    sc.Add(s, t, m);
    if (s % 50 == 0) sc.Add(s, t + 0.5, {{"val_loss", 1.0}});
  }
  EXPECT_THAT(sc.Summary(), testing::IsEmpty());
}

// ---- throughput_drop
TEST(RunDetectorTest, ThroughputDropOnceWhenStepsGetSlower) {
  Scenario sc;
  HealthyRun h;
  double t = kT0;
  for (int64_t s = 0; s < 600; ++s) {
    t += s < 300 ? 1.0 : 3.0;
    sc.Add(s, t, h.At(s));
  }
  EXPECT_THAT(sc.Summary(), testing::ElementsAre("throughput_drop@329"));
}

// ---- schedule traps
TEST(RunDetectorTest, WarmRestartScheduleIsNotAFault) {
  Scenario sc = RunHealthy(2000, [](int64_t s, Metrics* m) {
    int64_t cycle_pos = s % 400;
    double lr = 0.001 + 0.099 * 0.5 * (1 + std::cos(M_PI * static_cast<double>(cycle_pos) / 400.0));
    Set(m, "lr", lr);
    Set(m, "update_ratio", 1e-3 * lr / 0.1);
    if (s >= 400 && cycle_pos < 20) {  // the loss bumps 4x at each restart, then settles
      Set(m, "loss", m->front().second * (1 + 3.0 * (20 - cycle_pos) / 20.0));
    }
  });
  EXPECT_THAT(sc.Summary(), testing::IsEmpty());
}

TEST(RunDetectorTest, ResumeFromCheckpointIsNotAnAlert) {
  Scenario sc;
  HealthyRun h;
  for (int64_t s = 0; s < 500; ++s) sc.Add(s, kT0 + s, h.At(s));
  // Steps rewind 100 after a 180 s restart.
  for (int64_t s = 400; s < 900; ++s) {
    Metrics m = h.At(s);
    if (s < 402) Set(&m, "loss", 5 * m.front().second);  // the reload bumps the loss
    sc.Add(s, kT0 + 499 + 180 + static_cast<double>(s - 400), m);
  }
  EXPECT_THAT(sc.Summary(), testing::IsEmpty());
}

TEST(RunDetectorTest, EvalPrefixesAreWholeWords) {
  MetricBindings b;
  EXPECT_TRUE(IsEvalMetric("val_loss", b));
  EXPECT_TRUE(IsEvalMetric("val/loss", b));
  EXPECT_TRUE(IsEvalMetric("validation.loss", b));
  EXPECT_TRUE(IsEvalMetric("eval", b));
  EXPECT_FALSE(IsEvalMetric("value_loss", b));  // an RL critic's training loss
  EXPECT_FALSE(IsEvalMetric("testing_time", b));
  EXPECT_FALSE(IsEvalMetric("loss", b));
}

// ---- incident resolution
TEST(RunDetectorTest, NanResolvesAfterResolveRecordsFiniteRecords) {
  Scenario sc = RunHealthy(300, [](int64_t s, Metrics* m) {
    if (s == 100 || s == 101) Set(m, "loss", NAN);  // an AMP overflow that recovered
  });
  EXPECT_THAT(sc.Summary(), testing::ElementsAre("nan@100"));
  EXPECT_THAT(sc.Resolutions(), testing::ElementsAre("nan@111"));  // 10 finite records: 102..111
}

TEST(RunDetectorTest, DeadRunNanNeverResolves) {
  Scenario sc = RunHealthy(400, [](int64_t s, Metrics* m) {
    if (s >= 200) Set(m, "loss", NAN);
  });
  EXPECT_THAT(sc.Summary(), testing::ElementsAre("nan@200"));
  EXPECT_THAT(sc.Resolutions(), testing::IsEmpty());
}

TEST(RunDetectorTest, GradExplosionResolvesWhenNormsReturnBelowHalfTheThreshold) {
  Scenario sc = RunHealthy(400, [](int64_t s, Metrics* m) {
    if (s >= 300 && s < 320) Set(m, "grad_norm", 50.0);
    if (s >= 320 && s < 330) Set(m, "grad_norm", 4.0);  // above sqrt(10): still holding
  });
  EXPECT_THAT(sc.Summary(), testing::ElementsAre("grad_explosion@302"));
  EXPECT_THAT(sc.Resolutions(), testing::ElementsAre("grad_explosion@339"));
}

TEST(RunDetectorTest, StalledResolvesAtTheNextStep) {
  Scenario sc;
  HealthyRun h;
  for (int64_t s = 0; s <= 100; ++s) sc.Add(s, kT0 + s, h.At(s));
  sc.CheckStalled(kT0 + 100 + 301);
  EXPECT_THAT(sc.Resolutions(), testing::IsEmpty());
  sc.Add(101, kT0 + 100 + 400, h.At(101));
  EXPECT_THAT(sc.Resolutions(), testing::ElementsAre("stalled@101"));
}

TEST(RunDetectorTest, LossSpikeResolvesOnceTheLossStaysDown) {
  Scenario sc = RunHealthy(400, [](int64_t s, Metrics* m) {
    if (s == 300) Set(m, "loss", 20.0);
  });
  EXPECT_THAT(sc.Summary(), testing::ElementsAre("loss_spike@301"));
  EXPECT_THAT(sc.Resolutions(), testing::ElementsAre("loss_spike@310"));
}

TEST(RunDetectorTest, ThroughputDropResolvesWhenTheSpeedComesBack) {
  Scenario sc;
  HealthyRun h;
  double t = kT0;
  for (int64_t s = 0; s < 700; ++s) {
    t += (s >= 300 && s < 400) ? 3.0 : 1.0;
    sc.Add(s, t, h.At(s));
  }
  EXPECT_THAT(sc.Summary(), testing::ElementsAre("throughput_drop@329"));
  ASSERT_EQ(sc.Resolutions().size(), 1u);
  EXPECT_THAT(sc.Resolutions()[0], testing::StartsWith("throughput_drop@4"));
}

TEST(RunDetectorTest, SetOptionsKeepsBaselines) {
  HealthyRun h;
  RunDetector d("run");
  std::vector<Alert> out;
  auto feed = [&](int64_t s, Metrics m) {
    std::vector<std::pair<std::string_view, double>> view(m.begin(), m.end());
    d.Observe(s, kT0 + s, view, &out);
  };
  for (int64_t s = 0; s < 300; ++s) feed(s, h.At(s));
  DetectorOptions stricter;
  stricter.expl_ratio = 5;
  d.SetOptions(stricter);
  for (int64_t s = 300; s < 303; ++s) {
    Metrics m = h.At(s);
    Set(&m, "grad_norm", 7.0);  // 7x: an explosion only under the new ratio, against the old baseline
    feed(s, m);
  }
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, "grad_explosion");
  EXPECT_EQ(out[0].step, 302);
}

}  // namespace
}  // namespace trainwatch::detect

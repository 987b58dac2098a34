// Scenario tests for real logging cadences (issue 12): sparse and irregular logs, dense prefixes,
// eval-only records, huge normal norms, warm-up, schedules and resumes. Small runs in, alerts out.
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "detect/cadence.h"
#include "detect/robust_window.h"
#include "detect/scenario_testing.h"

namespace trainwatch::detect {
namespace {

using scenarios::Metrics;
using scenarios::Scenario;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr double kT0 = 1.7e9;
constexpr double kSecondsPerStep = 0.5;

// A smooth large-batch training curve (what a 100- or 500-step log shows): loss decaying from 7
// to 2 with 1% noise, a grad norm around `gn_scale` with 20% noise.
class SmoothRun {
 public:
  explicit SmoothRun(double gn_scale = 1.0, uint32_t seed = 7) : gn_scale_(gn_scale), rng_(seed) {}
  double Noise() { return std::uniform_real_distribution<double>(-0.5, 0.5)(rng_); }
  double Loss(int64_t step) {
    return (5.0 * std::exp(-static_cast<double>(step) / 20000.0) + 2.0) * (1 + 0.02 * Noise());
  }
  Metrics At(int64_t step) { return {{"loss", Loss(step)}, {"grad_norm", gn_scale_ * (1 + 0.4 * Noise())}}; }

 private:
  double gn_scale_;
  std::mt19937 rng_;
};

double TimeOf(int64_t step) { return kT0 + kSecondsPerStep * static_cast<double>(step); }

// Steps 0-99 every step, then every `interval` steps up to `last`.
std::vector<int64_t> PrefixThenEvery(int64_t interval, int64_t last) {
  std::vector<int64_t> steps;
  for (int64_t s = 0; s < 100; ++s) steps.push_back(s);
  for (int64_t s = interval; s <= last; s += interval) steps.push_back(s);
  return steps;
}

std::vector<int64_t> Every(int64_t interval, int64_t last) {
  std::vector<int64_t> steps;
  for (int64_t s = 0; s <= last; s += interval) steps.push_back(s);
  return steps;
}

// Feeds `run`'s record at each of `steps` to `sc`, letting `edit` change it first.
void Feed(Scenario& sc, SmoothRun& run, const std::vector<int64_t>& steps,
          const std::function<void(int64_t, Metrics*)>& edit = nullptr) {
  for (int64_t s : steps) {
    Metrics m = run.At(s);
    if (edit) edit(s, &m);
    sc.Add(s, TimeOf(s), m);
  }
}

TEST(CadenceTest, LearnsTheIntervalAndASwitchToSparserLogging) {
  Cadence c;
  for (int i = 0; i < 20; ++i) EXPECT_FALSE(c.Observe(1));
  EXPECT_EQ(c.interval(), 1);
  EXPECT_EQ(c.RecordsFor(50, 4), 50);
  EXPECT_TRUE(c.Observe(500));  // per-step prefix, then every 500 steps
  EXPECT_EQ(c.interval(), 500);
  EXPECT_FALSE(c.Observe(500));
  EXPECT_EQ(c.RecordsFor(50, 4), 4);  // 50 steps are a fraction of a record: the floor holds
  EXPECT_EQ(c.RecordsFor(3000, 4), 6);
}

TEST(RobustWindowTest, MedianAndATrendFreeSigma) {
  RobustWindow w(5);
  for (double x : {5.0, 4.0, 3.0, 2.0, 1.0, 0.0}) w.Push(x);  // the oldest (5) fell out
  EXPECT_DOUBLE_EQ(w.Median(), 2.0);
  EXPECT_DOUBLE_EQ(w.Sigma(), 0.0);  // a steady fall has no noise about its drift
  w.Push(10);
  EXPECT_DOUBLE_EQ(w.Median(), 2.0);
  EXPECT_GT(w.Sigma(), 0.0);
}

TEST(CadenceScenarioTest, ExplosionInTheSecondUpdateIsCaughtAtOnce) {
  Scenario sc;
  SmoothRun run(17.0);
  Feed(sc, run, Every(1, 59), [](int64_t s, Metrics* m) {
    if (s == 2) (*m)[1].second = 17.0 * 200;  // 200x the first rows' norm
  });
  EXPECT_THAT(sc.Summary(), ElementsAre("grad_explosion@2"));
  const Evidence& e = sc.alerts()[0].evidence;
  EXPECT_NEAR(e.ratio, 200, 80);
  EXPECT_EQ(e.records, 2);
  EXPECT_GT(e.observed, e.baseline);
}

TEST(CadenceScenarioTest, PerStepPrefixThenHundredStepLoggingIsQuiet) {
  Scenario sc;
  SmoothRun run;
  Feed(sc, run, PrefixThenEvery(100, 60000));
  EXPECT_THAT(sc.Summary(), IsEmpty());
}

TEST(CadenceScenarioTest, WarmUpWithA60xNormRiseAcrossTheCadenceSwitchIsQuiet) {
  // The grad norm climbs 60x while the lr warms up; the log goes from every step to every 500.
  Scenario sc;
  SmoothRun run;
  Feed(sc, run, PrefixThenEvery(500, 100000), [](int64_t s, Metrics* m) {
    double warm = std::min(1.0, static_cast<double>(s) / 2000.0);
    (*m)[1].second *= 0.1 + 5.9 * warm;
    m->emplace_back("lr", 1e-3 * std::max(warm, 0.01));
  });
  EXPECT_THAT(sc.Summary(), IsEmpty());
}

TEST(CadenceScenarioTest, NanSeenOnlyInEvalRowsAfterTheTrainingRowsStop) {
  Scenario sc;
  SmoothRun run;
  Feed(sc, run, Every(1, 99));
  for (int64_t s = 1000; s <= 12000; s += 1000) {
    double val = s >= 8000 ? NAN : 3.0 - static_cast<double>(s) / 10000.0;
    sc.Add(s, TimeOf(s), {{"val_loss", val}, {"validation/accuracy", 0.5}});
  }
  EXPECT_THAT(sc.Summary(), ElementsAre("nan@8000"));
}

TEST(CadenceScenarioTest, DivergenceSeenOnlyInEvalRowsAfterTheTrainingRowsStop) {
  Scenario sc;
  SmoothRun run;
  Feed(sc, run, Every(1, 99));
  for (int64_t s = 1000; s <= 9000; s += 1000) {
    double val = s == 6000 ? 27.0 : (s > 6000 ? 30.0 : 5.9 - static_cast<double>(s) / 5000.0);
    sc.Add(s, TimeOf(s), {{"val_loss", val}});
  }
  EXPECT_THAT(sc.Summary(), ElementsAre("divergence@6000"));
}

TEST(CadenceScenarioTest, EvalOnlyRecordsBetweenTrainingRecordsAreNormalInput) {
  Scenario sc;
  SmoothRun run;
  for (int64_t s = 0; s <= 50000; s += 100) {
    sc.Add(s, TimeOf(s), run.At(s));
    if (s % 2500 == 0) {
      // An eval record: no training loss, a noisy eval loss, another series named like the loss.
      sc.Add(s + 7, TimeOf(s + 7) + 60, {{"val_loss", run.Loss(s) * 1.1}, {"train/loss", run.Loss(s) * 0.6},
                                         {"validation/accuracy", 0.4}, {"accumulated_eval_time", 60.0}});
    }
  }
  EXPECT_THAT(sc.Summary(), IsEmpty());
}

TEST(CadenceScenarioTest, GradNormsAtTheScaleOf1e9AreNormalAndSpikesAreRatios) {
  Scenario quiet, spiked;
  SmoothRun a(1e9), b(1e9);
  Feed(quiet, a, Every(100, 40000));
  Feed(spiked, b, Every(100, 40000), [](int64_t s, Metrics* m) {
    if (s == 30000) (*m)[1].second = 1e11;  // 100x
  });
  EXPECT_THAT(quiet.Summary(), IsEmpty());
  EXPECT_THAT(spiked.Summary(), ElementsAre("grad_explosion@30000"));
}

TEST(CadenceScenarioTest, ScheduledLrRestartsAreNotSpikes) {
  // Cosine schedule restarted every 500 steps; the loss bumps 1.8x at each restart and comes down.
  Scenario sc;
  SmoothRun run;
  for (int64_t s = 0; s < 5000; ++s) {
    const int64_t phase = s % 500;
    double lr = 0.05 * (1 + std::cos(M_PI * static_cast<double>(phase) / 500.0)) / 2 + 1e-4;
    double bump = s >= 500 ? 1.0 + 0.8 * std::exp(-static_cast<double>(phase) / 20.0) : 1.0;
    sc.Add(s, TimeOf(s), {{"loss", run.Loss(s) * bump}, {"grad_norm", 1.0}, {"lr", lr}});
  }
  EXPECT_THAT(sc.Summary(), IsEmpty());
}

TEST(CadenceScenarioTest, AResumedRunIsNotAnAlert) {
  // Logged every 100 steps to 20000, killed, resumed from the checkpoint at 15000 with a bump.
  Scenario sc;
  SmoothRun run;
  Feed(sc, run, Every(100, 20000));
  for (int64_t s = 15000; s <= 40000; s += 100) {
    Metrics m = run.At(s);
    if (s == 15000) m[0].second *= 1.3;
    sc.Add(s, TimeOf(s) + 20000, m);
  }
  EXPECT_THAT(sc.Summary(), IsEmpty());
}

TEST(CadenceScenarioTest, FiveHundredStepLoggingWithARealSpike) {
  Scenario sc;
  SmoothRun run;
  Feed(sc, run, Every(500, 200000), [](int64_t s, Metrics* m) {
    if (s == 120000) (*m)[0].second *= 3;  // one record: the whole episode at this cadence
  });
  EXPECT_THAT(sc.Summary(), ElementsAre("loss_spike@120000"));
  const Alert& a = sc.alerts()[0];
  EXPECT_NEAR(a.evidence.ratio, 3, 0.3);
  EXPECT_EQ(a.evidence.records, 20);
  EXPECT_THAT(a.message, ::testing::HasSubstr("median"));
}

TEST(CadenceScenarioTest, ALossJumpThatHoldsWhileTheLrStillWarmsUpIsADivergence) {
  // Per-step logging during a linear warm-up; from step 70 the loss sits 3x higher and stays.
  auto run_with = [](bool lr_rising) {
    Scenario sc;
    SmoothRun run;
    Feed(sc, run, Every(1, 99), [&](int64_t s, Metrics* m) {
      if (s >= 70) (*m)[0].second *= 3;
      m->emplace_back("lr", lr_rising ? 1e-4 * static_cast<double>(s + 1) : 1e-3);
    });
    return sc.Summary();
  };
  EXPECT_THAT(run_with(true), ElementsAre("divergence@72"));
  // The same jump at a constant lr is a level shift: neither a spike (it never comes back) nor,
  // within these records, a divergence.
  EXPECT_THAT(run_with(false), IsEmpty());
}

TEST(CadenceScenarioTest, ALogEndingMidRunIsNotAStall) {
  // Offline, the records simply stop: nothing after the last one says the job hung.
  Scenario sc;
  SmoothRun run;
  Feed(sc, run, Every(10, 3000));
  EXPECT_THAT(sc.Summary(), IsEmpty());
  // A gap inside the log that its steps do not explain is one.
  sc.Add(3010, TimeOf(3010) + 3600, run.At(3010));
  EXPECT_THAT(sc.Summary(), ElementsAre("stalled@3000"));
}

TEST(CadenceScenarioTest, AGapCoveringManyStepsIsNotAStall) {
  // Per-step prefix at 0.5 s per step, then one record 2,000 steps (1,000 s) later.
  Scenario sc;
  SmoothRun run;
  Feed(sc, run, PrefixThenEvery(2000, 20000));
  EXPECT_THAT(sc.Summary(), IsEmpty());
}

TEST(CadenceScenarioTest, HigherSensitivityAlertsOnSmallerExcursions) {
  auto run_with = [](double sensitivity) {
    DetectorOptions options;
    options.sensitivity = sensitivity;
    Scenario sc(options);
    SmoothRun run;
    Feed(sc, run, Every(100, 30000), [](int64_t s, Metrics* m) {
      if (s == 20000) (*m)[0].second *= 1.7;  // under the default 2x, over 2^0.7 = 1.62x
    });
    return sc.Summary();
  };
  EXPECT_THAT(run_with(1.0), IsEmpty());
  EXPECT_THAT(run_with(0.7), ElementsAre("loss_spike@20000"));
}

}  // namespace
}  // namespace trainwatch::detect

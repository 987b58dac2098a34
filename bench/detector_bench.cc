// Detector cost per point: what the server adds to each committed point for anomaly detection and
// alert rules. Two measurements, both in one thread, printing figures only:
//  1. RunMonitor::Observe on realistic training records (loss, grad norms overall and per layer,
//     lr, update ratio, throughput, accuracy; an eval record every 100 steps) — the detectors
//     alone, then with a rule file of expression rules;
//  2. AlertManager on WriteRequests shaped like the SDK's batches (8 runs x 2,000 rows x 10
//     metrics): what OnCommit costs the applier thread (copying the rows into the detection
//     queue), and the whole in-server path until Flush() returns (pivoting columns into records,
//     per-run lookup, detectors and rules on the detection thread).
//
//     build/bin/detector_bench [--records N]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "alerting/alert_manager.h"
#include "alerting/run_monitor.h"
#include "common/clock.h"
#include "common/logging.h"
#include "common/metrics_registry.h"
#include "rules/rule_file.h"

namespace {

using trainwatch::alerting::AlertEvent;
using trainwatch::alerting::RunMonitor;
using Clock = std::chrono::steady_clock;

constexpr const char* kRules = R"(groups:
  - name: bench
    rules:
      - {alert: HighLoss, expr: loss > 50, for: 100 steps}
      - {alert: GradMean, expr: 'mean(grad_norm, 100) > 100 and max(grad_norm, 100) > 1000'}
      - {alert: ValGap, expr: val_loss > 3 * loss}
      - {alert: SlowSteps, expr: 'samples_per_sec < 0.1 * max(samples_per_sec, 1000)', for: 5m}
      - {alert: LossRising, expr: 'delta(loss, 500) > 5'}
)";

const std::vector<std::string> kNames = {"loss",   "grad_norm", "grad_norm/l1", "grad_norm/l2", "grad_norm/l3",
                                         "grad_norm/l4", "lr", "update_ratio", "samples_per_sec", "acc"};

// The value of metric m at step s: a healthy, noisy, slowly improving run.
double Value(size_t m, int64_t s, std::mt19937& rng) {
  double noise = std::uniform_real_distribution<double>(-0.5, 0.5)(rng);
  double t = static_cast<double>(s);
  switch (m) {
    case 0: return (2.0 * std::exp(-t / 5000.0) + 0.5) * (1 + 0.05 * noise);
    case 6: return 1e-3;
    case 7: return 1e-3 * (1 + 0.2 * noise);
    case 8: return 5000 * (1 + 0.05 * noise);
    case 9: return 0.9 - 0.5 * std::exp(-t / 5000.0);
    default: return (m == 1 ? 1.0 : 0.3 * static_cast<double>(m)) * (1 + 0.2 * noise);
  }
}

double ObserveCost(std::shared_ptr<const trainwatch::rules::RuleSet> rules, int64_t records, size_t* alerts) {
  RunMonitor monitor("bench", "run", std::move(rules));
  std::mt19937 rng(7);
  // Values first: the measurement is the monitor, not the generator.
  std::vector<double> values(static_cast<size_t>(records) * kNames.size());
  for (int64_t s = 0; s < records; ++s) {
    for (size_t m = 0; m < kNames.size(); ++m) values[static_cast<size_t>(s) * kNames.size() + m] = Value(m, s, rng);
  }
  std::vector<std::pair<std::string_view, double>> metrics;
  std::vector<AlertEvent> events;
  const double t0 = 1.8e9;
  size_t points = 0;
  auto start = Clock::now();
  for (int64_t s = 0; s < records; ++s) {
    metrics.clear();
    const double* row = &values[static_cast<size_t>(s) * kNames.size()];
    for (size_t m = 0; m < kNames.size(); ++m) metrics.emplace_back(kNames[m], row[m]);
    monitor.Observe(s, t0 + 0.1 * static_cast<double>(s), metrics, &events);
    points += metrics.size();
    if (s % 100 == 99) {
      std::pair<std::string_view, double> eval[] = {{"val_loss", 0.7}, {"val_acc", 0.8}};
      monitor.Observe(s, t0 + 0.1 * static_cast<double>(s) + 0.05, eval, &events);
      points += 2;
    }
  }
  double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
  *alerts = events.size();
  return ns / static_cast<double>(points);
}

struct CommitCosts {
  double on_commit_ns = 0;  // per point, the applier thread's share
  double total_ns = 0;      // per point, until everything is detected
};

CommitCosts CommitCost(std::shared_ptr<const trainwatch::rules::RuleSet> rules, int64_t rows_per_run,
                       size_t* points_out) {
  trainwatch::ManualClock clock(1.8e9);
  trainwatch::Logger logger(trainwatch::LogLevel::kError);
  trainwatch::MetricsRegistry metrics;
  char dir_template[] = "/tmp/detector-bench-XXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (dir == nullptr) {
    std::perror("mkdtemp");
    std::exit(1);
  }
  auto manager = trainwatch::alerting::AlertManager::Open({}, trainwatch::PosixFileSystem(), std::string(dir) + "/alerts",
                                                          clock, logger, metrics, rules);
  if (!manager.ok()) {
    std::fprintf(stderr, "%s\n", manager.status().ToString().c_str());
    std::exit(1);
  }
  (*manager)->Start();
  constexpr int kRuns = 8;
  constexpr int kRowsPerBatch = 2000;
  std::mt19937 rng(11);
  // Build every request first: the measurement is the listener, not protobuf construction.
  std::vector<trainwatch::v1::WriteRequest> requests;
  size_t points = 0;
  for (int64_t first = 0; first < rows_per_run; first += kRowsPerBatch) {
    trainwatch::v1::WriteRequest request;
    for (int r = 0; r < kRuns; ++r) {
      trainwatch::v1::RunBatch* batch = request.add_runs();
      batch->set_project("bench");
      batch->set_run("run-" + std::to_string(r));
      std::vector<trainwatch::v1::MetricColumn*> columns;
      for (const std::string& name : kNames) {
        columns.push_back(batch->add_metrics());
        columns.back()->set_name(name);
      }
      for (int64_t s = first; s < first + kRowsPerBatch && s < rows_per_run; ++s) {
        batch->add_steps(s);
        batch->add_times(1.8e9 + 0.1 * static_cast<double>(s));
        for (size_t m = 0; m < kNames.size(); ++m) columns[m]->add_values(Value(m, s, rng));
        points += kNames.size();
      }
    }
    requests.push_back(std::move(request));
  }
  auto start = Clock::now();
  for (const auto& request : requests) (*manager)->OnCommit(request);
  double committed_ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
  (*manager)->Flush();
  double total_ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
  (*manager)->Stop();
  std::string cleanup = std::string("rm -rf ") + dir;
  if (std::system(cleanup.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", dir);
  *points_out = points;
  return CommitCosts{committed_ns / static_cast<double>(points), total_ns / static_cast<double>(points)};
}

}  // namespace

int main(int argc, char** argv) {
  int64_t records = 1'000'000;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--records") == 0 && i + 1 < argc) {
      records = std::atoll(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: detector_bench [--records N]\n");
      return 2;
    }
  }
  auto defaults = std::make_shared<const trainwatch::rules::RuleSet>();
  auto parsed = trainwatch::rules::ParseRules(kRules, "bench-rules.yml");
  if (!parsed.ok()) {
    std::fprintf(stderr, "%s\n", parsed.status().ToString().c_str());
    return 1;
  }
  auto with_rules = std::make_shared<const trainwatch::rules::RuleSet>(std::move(*parsed));

  std::printf("detector cost, one thread, %lld records x %zu metrics (+ an eval record every 100)\n",
              static_cast<long long>(records), kNames.size());
  for (auto [label, rules] : {std::pair{"built-in detectors", defaults}, std::pair{"detectors + 5 rules", with_rules}}) {
    size_t alerts = 0;
    ObserveCost(rules, records / 10, &alerts);  // warm-up
    double ns = ObserveCost(rules, records, &alerts);
    std::printf("  RunMonitor::Observe, %-22s %7.1f ns/point  (%.2f M points/s per core, %zu alerts)\n", label, ns,
                1e3 / ns, alerts);
  }
  for (auto [label, rules] : {std::pair{"built-in detectors", defaults}, std::pair{"detectors + 5 rules", with_rules}}) {
    size_t points = 0;
    CommitCosts c = CommitCost(rules, records / 8, &points);
    std::printf("  AlertManager, %-29s OnCommit (applier) %5.1f ns/point; until detected %6.1f ns/point "
                "(%.2f M points/s; %zu points in SDK-sized batches)\n",
                label, c.on_commit_ns, c.total_ns, 1e3 / c.total_ns, points);
  }
  return 0;
}

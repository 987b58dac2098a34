// SDK benchmark (C++): what Run::Log costs the training loop, beside the simplest thing users do
// today (append the same record as a JSON line to a file), and how many points per second one SDK
// process delivers to a server. Prints figures only; never passes or fails on them.
//
//   sdk_log_bench --server http://127.0.0.1:8080 [--calls 200000] [--points 20000000]
//
// Latency: every call is timed on its own with the steady clock; the clock's own cost (measured
// the same way around nothing) is subtracted. Calls are paced at --rate per second (default
// 100000/s: far above any training loop, so the background threads must keep up) or unpaced with
// --rate 0. Throughput: --points points logged as fast as possible, timed until the server has
// acknowledged every one (acknowledged = durable there).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "latency.h"
#include "trainwatch/client.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kMetrics = 10;
const char* const kNames[kMetrics] = {"loss", "lr", "acc", "grad_norm", "val_loss",
                                      "tokens_per_sec", "m6", "m7", "m8", "m9"};

double Ns(Clock::duration d) { return std::chrono::duration<double, std::nano>(d).count(); }

double ClockOverheadNs() {
  std::vector<double> samples(200000);
  for (double& s : samples) {
    auto t0 = Clock::now();
    auto t1 = Clock::now();
    s = Ns(t1 - t0);
  }
  return trainwatch::bench::Summarize(samples).p50;
}

// Runs `call(i)` `calls` times at `rate` per second (0: unpaced); returns per-call ns.
template <typename F>
std::vector<double> TimeCalls(int calls, double rate, double overhead, F call) {
  std::vector<double> samples(calls);
  auto start = Clock::now();
  for (int i = 0; i < calls; ++i) {
    if (rate > 0) {
      auto due = start + std::chrono::nanoseconds(static_cast<int64_t>(i * 1e9 / rate));
      while (Clock::now() < due) {
      }
    }
    auto t0 = Clock::now();
    call(i);
    auto t1 = Clock::now();
    samples[i] = std::max(0.0, Ns(t1 - t0) - overhead);
  }
  return samples;
}

void Print(const char* what, std::vector<double>& samples) {
  auto s = trainwatch::bench::Summarize(samples);
  std::printf("  %-44s %s\n", what, trainwatch::bench::FormatSummary(s, 1.0, "ns").c_str());
}

}  // namespace

int main(int argc, char** argv) {
  std::string server = "http://127.0.0.1:8080";
  int calls = 200000;
  double rate = 100000;
  long long throughput_points = 20000000;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--server") server = argv[i + 1];
    else if (flag == "--calls") calls = std::atoi(argv[i + 1]);
    else if (flag == "--rate") rate = std::atof(argv[i + 1]);
    else if (flag == "--points") throughput_points = std::atoll(argv[i + 1]);
    else {
      std::fprintf(stderr, "unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  const double overhead = ClockOverheadNs();
  std::printf("sdk_log_bench: %d calls per case at %s, server %s (clock overhead %.0f ns, subtracted)\n",
              calls, rate > 0 ? (std::to_string(static_cast<long>(rate)) + "/s").c_str() : "full speed",
              server.c_str(), overhead);

  trainwatch::ClientOptions options;
  options.server = server;
  options.spool_dir = "/tmp/trainwatch-bench-spool";
  trainwatch::Client client(options);
  trainwatch::RunOptions run_options;
  run_options.project = "sdk-bench";
  run_options.id = "log-latency-" + std::to_string(::getpid());
  run_options.system_metrics_interval_seconds = 0;
  auto run = client.StartRun(run_options);
  std::vector<trainwatch::Metric> metrics(kMetrics);
  for (int m = 0; m < kMetrics; ++m) metrics[m] = {kNames[m], 0.0};
  // Warm-up: interns the names, connects.
  for (int i = 0; i < 1000; ++i) run->Log(i, std::span<const trainwatch::Metric>(metrics));
  client.Flush(30);

  auto one = TimeCalls(calls, rate, overhead, [&](int i) {
    run->Log(1000 + i, {{"loss", 1.0 / (i + 1)}});
  });
  auto ten = TimeCalls(calls, rate, overhead, [&](int i) {
    for (int m = 0; m < kMetrics; ++m) metrics[m].value = i * 0.001 + m;
    run->Log(1000 + calls + i, std::span<const trainwatch::Metric>(metrics));
  });
  bool delivered = client.Flush(60);
  auto stats = client.Stats();

  std::string path = "/tmp/trainwatch-bench-" + std::to_string(::getpid()) + ".jsonl";
  FILE* file = std::fopen(path.c_str(), "w");
  auto json = TimeCalls(calls, rate, overhead, [&](int i) {
    char line[1024];
    int n = std::snprintf(line, sizeof line, "{\"step\":%d,\"time\":%.6f", 1000 + i,
                          std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
    for (int m = 0; m < kMetrics; ++m) {
      n += std::snprintf(line + n, sizeof line - n, ",\"%s\":%.17g", kNames[m], i * 0.001 + m);
    }
    line[n++] = '}';
    line[n++] = '\n';
    std::fwrite(line, 1, n, file);
  });
  std::fclose(file);
  ::unlink(path.c_str());

  std::printf("per call:\n");
  Print("Run::Log, 1 metric", one);
  Print("Run::Log, 10 metrics", ten);
  Print("JSON line to a file (snprintf+fwrite), 10 metrics", json);
  std::printf("  delivered: %s; points logged %llu, acked %llu, dropped %llu\n", delivered ? "all" : "NOT ALL",
              static_cast<unsigned long long>(stats.points_logged), static_cast<unsigned long long>(stats.points_acked),
              static_cast<unsigned long long>(stats.points_dropped));

  // Throughput: one process, one run, 10 metrics per step, as fast as it goes. Logging in a tight
  // loop outruns any pipeline; with the default policy the buffer would drop the oldest points, so
  // this client blocks instead and the figure is the sustained delivery rate.
  trainwatch::ClientOptions t_client_options = options;
  t_client_options.overflow = trainwatch::OverflowPolicy::kBlock;
  trainwatch::Client t_client(t_client_options);
  trainwatch::RunOptions t_options = run_options;
  t_options.id = "throughput-" + std::to_string(::getpid());
  auto t_run = t_client.StartRun(t_options);
  auto& client_for_throughput = t_client;
  auto before = client_for_throughput.Stats();
  auto t0 = Clock::now();
  long long steps = throughput_points / kMetrics;
  for (long long step = 0; step < steps; ++step) {
    for (int m = 0; m < kMetrics; ++m) metrics[m].value = step * 0.5 + m;
    t_run->Log(step, std::span<const trainwatch::Metric>(metrics));
  }
  auto logged = Clock::now();
  delivered = client_for_throughput.Flush(600);
  auto done = Clock::now();
  auto after = client_for_throughput.Stats();
  double seconds = std::chrono::duration<double>(done - t0).count();
  unsigned long long acked = after.points_acked - before.points_acked;
  std::printf("throughput: %llu points logged in %.2f s, all acknowledged after %.2f s: %.2f M points/s delivered "
              "(%s; dropped %llu, transport %s)\n",
              static_cast<unsigned long long>(steps * kMetrics), std::chrono::duration<double>(logged - t0).count(),
              seconds, acked / seconds / 1e6, delivered ? "complete" : "INCOMPLETE",
              static_cast<unsigned long long>(after.points_dropped - before.points_dropped), after.transport.c_str());
  t_run->Finish();
  run->Finish();
  t_client.Flush(60);
  client.Flush(60);
  return 0;
}

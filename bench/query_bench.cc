// Query latency client: sends each given GET target repeatedly over one keep-alive connection and
// prints latency percentiles, the response size, and the first (cold) request's time. Prints
// figures only; never passes or fails on them.
//
//   query_bench --target 127.0.0.1:8080 [--repeat 200] [--warmup 5] [--server-pid PID]
//               [--json-out FILE] NAME=TARGET [NAME=TARGET ...]
//
// With --server-pid it also prints the server's CPU time per request (from /proc), which a busy
// machine disturbs far less than the latency.
//   e.g. raw25k='/api/v1/series?run=run_00&metric=train%2Floss'

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "http_client.h"
#include "latency.h"
#include "proc_stats.h"

namespace trainwatch::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Query {
  std::string name, target;
};

int Main(int argc, char** argv) {
  std::string target_addr, json_out;
  int repeat = 200, warmup = 5, server_pid = 0;
  std::vector<Query> queries;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--target" && i + 1 < argc) target_addr = argv[++i];
    else if (a == "--repeat" && i + 1 < argc) repeat = std::max(1, std::atoi(argv[++i]));
    else if (a == "--warmup" && i + 1 < argc) warmup = std::max(0, std::atoi(argv[++i]));
    else if (a == "--json-out" && i + 1 < argc) json_out = argv[++i];
    else if (a == "--server-pid" && i + 1 < argc) server_pid = std::atoi(argv[++i]);
    else if (size_t eq = a.find('='); eq != std::string::npos && !a.starts_with("--")) {
      queries.push_back({a.substr(0, eq), a.substr(eq + 1)});
    } else {
      std::fprintf(stderr, "usage: query_bench --target HOST:PORT [--repeat N] [--warmup N] "
                           "[--server-pid PID] [--json-out FILE] NAME=TARGET...\n");
      return 2;
    }
  }
  std::string host, error;
  uint16_t port = 0;
  HttpConnection conn;
  if (queries.empty() || !SplitHostPort(target_addr, &host, &port) || !conn.Connect(host, port, &error)) {
    std::fprintf(stderr, "query_bench: %s\n", error.empty() ? "need --target and at least one query" : error.c_str());
    return error.empty() ? 2 : 1;
  }
  nlohmann::json results = nlohmann::json::array();
  for (const Query& q : queries) {
    HttpReply reply;
    std::vector<double> samples;
    double first = 0, server_cpu = 0;
    for (int i = 0; i < warmup + repeat; ++i) {
      if (i == warmup && server_pid) server_cpu = -ProcessCpuSeconds(server_pid).value_or(0);
      auto t0 = Clock::now();
      if (!conn.Request("GET", q.target, "", "", &reply, &error)) {
        std::fprintf(stderr, "query_bench: %s: %s\n", q.name.c_str(), error.c_str());
        return 1;
      }
      double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      if (reply.status != 200) {
        std::fprintf(stderr, "query_bench: %s: HTTP %d: %.300s\n", q.name.c_str(), reply.status, reply.body.c_str());
        return 1;
      }
      if (i == 0) first = seconds;
      if (i >= warmup) samples.push_back(seconds);
    }
    if (server_pid) server_cpu += ProcessCpuSeconds(server_pid).value_or(0);
    const double cpu_ms = server_pid ? server_cpu * 1e3 / repeat : 0;
    LatencySummary s = Summarize(samples);
    std::string shown = q.target.size() > 100 ? q.target.substr(0, 97) + "..." : q.target;
    std::printf("query %-14s %s\n", q.name.c_str(), shown.c_str());
    std::printf("  latency        %s\n", FormatSummary(s, 1e3, "ms").c_str());
    std::printf("  first request  %.3f ms; response %zu bytes", first * 1e3, reply.body.size());
    if (server_pid) std::printf("; server CPU %.2f ms per request", cpu_ms);
    std::printf("\n");
    std::fflush(stdout);
    results.push_back({{"name", q.name}, {"target", q.target}, {"p50_ms", s.p50 * 1e3},
                       {"p90_ms", s.p90 * 1e3}, {"p99_ms", s.p99 * 1e3}, {"max_ms", s.max * 1e3},
                       {"mean_ms", s.mean * 1e3}, {"first_ms", first * 1e3},
                       {"response_bytes", reply.body.size()}, {"n", s.count},
                       {"server_cpu_ms", cpu_ms}});
  }
  if (!json_out.empty()) std::ofstream(json_out) << results.dump() << "\n";
  return 0;
}

}  // namespace
}  // namespace trainwatch::bench

int main(int argc, char** argv) { return trainwatch::bench::Main(argc, argv); }

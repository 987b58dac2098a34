// Ingest benchmark client: pushes a workload into a running server as fast as it acknowledges it
// and prints wall time, points/s, the server's CPU seconds and points per server CPU-second. Every
// request is built before the clock starts, so the client's own cost stays small. Prints figures
// only; never passes or fails on them.
//
//   ingest_bench --transport grpc --target 127.0.0.1:8081 --workload wl/workload.jsonl --server-pid P
//   ingest_bench --transport http --target 127.0.0.1:8080 --shape 8x50x2500 --connections 4
//   ingest_bench --transport files --target 127.0.0.1:8086 --files wl/influx_lp
//                --path '/write?db=bench&precision=ns' --points 1000000 --connections 2
//
// Transports: grpc (trainwatch.v1.Ingest/Write bidi streams; each stream keeps --inflight batches
// unacknowledged; acks mean durable), http (POST /api/v1/write NDJSON bodies over keep-alive
// connections, one request in flight each), files (every file of --files as one POST body to
// --path: for InfluxDB line protocol). --rate paces the lanes; --max-seconds stops them, and with
// --loop (gRPC) they resend the workload shifted past its last step until then, as a background
// load of any length from a bounded workload. --json-out writes the figures as one JSON object.

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "ingest_lanes.h"
#include "latency.h"
#include "proc_stats.h"
#include "workload.h"

namespace trainwatch::bench {
namespace {

struct Flags {
  std::string transport = "grpc";
  std::string target;
  std::string workload;  // workload.jsonl
  std::string shape;     // RxMxS, instead of --workload
  std::string tls_ca;    // gRPC over TLS, trusting this PEM CA
  std::string project;
  std::string run_prefix = "run_";
  int streams = 4;
  int inflight = 8;
  int rows_per_batch = 1000;
  bool writer_ids = true;
  int connections = 4;
  size_t body_bytes = 4 << 20;
  std::string files;
  std::string path = "/api/v1/write";
  std::string content_type;
  uint64_t points = 0;  // files transport: the points the files hold
  int server_pid = 0;
  double max_seconds = 0;  // stop submitting after this long (0: send everything)
  bool loop = false;       // grpc: resend the workload, later in steps and time, until max_seconds
  double rate = 0;         // points/s over all lanes (0: as fast as acknowledged)
  std::string json_out;
  std::string label;
};

const char kUsage[] =
    "usage: ingest_bench --transport grpc|http|files --target HOST:PORT\n"
    "  (--workload FILE.jsonl | --shape RUNSxMETRICSxSTEPS [--run-prefix P] | --files DIR --points N)\n"
    "  [--project P] [--server-pid PID] [--json-out FILE] [--label TEXT]\n"
    "  grpc:  [--streams 4] [--inflight 8] [--rows-per-batch 1000] [--no-writer-id] [--tls-ca CA.pem]\n"
    "  http:  [--connections 4] [--body-bytes 4194304]\n"
    "  files: [--connections 4] [--path TARGET] [--content-type TYPE]\n"
    "  [--max-seconds S [--loop]] [--rate POINTS_PER_S]\n";

bool ParseFlags(int argc, char** argv, Flags* f) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--transport") f->transport = value();
    else if (a == "--target") f->target = value();
    else if (a == "--workload") f->workload = value();
    else if (a == "--shape") f->shape = value();
    else if (a == "--project") f->project = value();
    else if (a == "--run-prefix") f->run_prefix = value();
    else if (a == "--streams") f->streams = std::atoi(value().c_str());
    else if (a == "--inflight") f->inflight = std::atoi(value().c_str());
    else if (a == "--rows-per-batch") f->rows_per_batch = std::atoi(value().c_str());
    else if (a == "--no-writer-id") f->writer_ids = false;
    else if (a == "--connections") f->connections = std::atoi(value().c_str());
    else if (a == "--body-bytes") f->body_bytes = std::strtoull(value().c_str(), nullptr, 10);
    else if (a == "--files") f->files = value();
    else if (a == "--path") f->path = value();
    else if (a == "--content-type") f->content_type = value();
    else if (a == "--points") f->points = std::strtoull(value().c_str(), nullptr, 10);
    else if (a == "--server-pid") f->server_pid = std::atoi(value().c_str());
    else if (a == "--max-seconds") f->max_seconds = std::atof(value().c_str());
    else if (a == "--loop") f->loop = true;
    else if (a == "--rate") f->rate = std::atof(value().c_str());
    else if (a == "--json-out") f->json_out = value();
    else if (a == "--label") f->label = value();
    else if (a == "--tls-ca") f->tls_ca = value();
    else return false;
  }
  if (f->loop && (f->transport != "grpc" || f->max_seconds <= 0)) return false;
  bool source = f->transport == "files" ? !f->files.empty() : (!f->workload.empty() != !f->shape.empty());
  return !f->target.empty() && source && f->streams > 0 && f->inflight > 0 && f->connections > 0 &&
         f->rows_per_batch > 0 && (f->transport == "grpc" || f->transport == "http" || f->transport == "files");
}

// --- report ---

struct CpuFigures {
  double server = 0;  // seconds of the server process (--server-pid)
  double client = 0;  // seconds of this process
  double others = 0;  // seconds of every other process on the machine
};

void Report(const Flags& flags, const std::vector<LaneResult>& lanes, double wall, const CpuFigures& cpu,
            const std::string& shape) {
  const double server_cpu = cpu.server;
  LaneResult total;
  std::vector<double> latencies;
  for (const LaneResult& l : lanes) {
    total.requests += l.requests;
    total.points_sent += l.points_sent;
    total.points_accepted += l.points_accepted;
    total.points_rejected += l.points_rejected;
    total.failed_requests += l.failed_requests;
    if (total.first_error.empty()) total.first_error = l.first_error;
    latencies.insert(latencies.end(), l.latencies.begin(), l.latencies.end());
  }
  LatencySummary lat = Summarize(latencies);
  const double rate = total.points_sent / wall;
  const double per_cpu = server_cpu > 0 ? total.points_sent / server_cpu : 0;
  std::printf("ingest %s%s%s: %s\n", flags.transport.c_str(), flags.label.empty() ? "" : " ",
              flags.label.c_str(), shape.c_str());
  std::printf("  points           %llu sent, %llu accepted, %llu rejected; %llu requests, %llu failed\n",
              (unsigned long long)total.points_sent, (unsigned long long)total.points_accepted,
              (unsigned long long)total.points_rejected, (unsigned long long)total.requests,
              (unsigned long long)total.failed_requests);
  if (!total.first_error.empty()) std::printf("  first error      %s\n", total.first_error.c_str());
  std::printf("  wall             %.3f s  ->  %.3f M points/s\n", wall, rate / 1e6);
  if (flags.server_pid > 0) {
    std::printf("  server CPU       %.2f s (%.2f cores busy)  ->  %.3f M points per server CPU-second\n",
                server_cpu, server_cpu / wall, per_cpu / 1e6);
  }
  std::printf("  client CPU       %.2f s (this process, after the bodies were built)\n", cpu.client);
  std::printf("  other processes %.2f CPU-s (%.2f cores on average: noise from the rest of the machine)\n",
              cpu.others, cpu.others / wall);
  std::printf("  ack latency      %s\n", FormatSummary(lat, 1e3, "ms").c_str());
  std::fflush(stdout);
  if (!flags.json_out.empty()) {
    nlohmann::json j = {{"transport", flags.transport}, {"label", flags.label}, {"shape", shape},
                        {"points_sent", total.points_sent}, {"points_accepted", total.points_accepted},
                        {"points_rejected", total.points_rejected}, {"requests", total.requests},
                        {"failed_requests", total.failed_requests}, {"first_error", total.first_error},
                        {"wall_s", wall}, {"points_per_s", rate}, {"server_cpu_s", server_cpu},
                        {"points_per_server_cpu_s", per_cpu}, {"client_cpu_s", cpu.client},
                        {"other_cpu_s", cpu.others},
                        {"ack_p50_ms", lat.p50 * 1e3}, {"ack_p99_ms", lat.p99 * 1e3}};
    std::ofstream(flags.json_out) << j.dump() << "\n";
  }
}

int Main(int argc, char** argv) {
  Flags flags;
  if (!ParseFlags(argc, argv, &flags)) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  Workload workload;
  std::string shape;
  if (flags.transport != "files") {
    auto t0 = Clock::now();
    if (!flags.workload.empty()) {
      std::string error;
      if (!LoadWorkloadJsonl(flags.workload, &workload, &error)) {
        std::fprintf(stderr, "ingest_bench: %s\n", error.c_str());
        return 1;
      }
    } else {
      int r = 0, m = 0;
      long long s = 0;
      if (std::sscanf(flags.shape.c_str(), "%dx%dx%lld", &r, &m, &s) != 3 || r <= 0 || m <= 0 || s <= 0) {
        std::fprintf(stderr, "ingest_bench: --shape wants RUNSxMETRICSxSTEPS\n");
        return 2;
      }
      workload = SyntheticWorkload(r, m, s, flags.run_prefix);
      workload.project = "bench";
    }
    if (!flags.project.empty()) workload.project = flags.project;
    shape = std::to_string(workload.runs.size()) + " runs x " + std::to_string(workload.metrics.size()) +
            " metrics, " + std::to_string(workload.points()) + " points";
    std::fprintf(stderr, "ingest_bench: workload ready in %.1f s (%s)\n",
                 std::chrono::duration<double>(Clock::now() - t0).count(), shape.c_str());
  }

  // Build every request and open every connection before the clock starts.
  const int lanes = flags.transport == "grpc" ? flags.streams : flags.connections;
  std::vector<std::vector<ProtoBatch>> proto(static_cast<size_t>(lanes));
  std::vector<std::vector<TextBody>> bodies(static_cast<size_t>(lanes));
  if (flags.transport == "grpc") {
    for (int l = 0; l < lanes; ++l) {
      proto[l] = BuildProtoBatches(workload, l, lanes, flags.rows_per_batch);
      if (flags.writer_ids) {
        std::string writer = "ingest-bench-" + std::to_string(getpid()) + "-" + std::to_string(l);
        uint64_t seq = 0;
        for (ProtoBatch& b : proto[l]) {
          b.request.set_writer_id(writer);
          b.request.set_sequence(++seq);
        }
      }
    }
    shape += ", " + std::to_string(flags.streams) + " streams x " + std::to_string(flags.inflight) +
             " in flight, " + std::to_string(flags.rows_per_batch) + " rows per batch";
  } else if (flags.transport == "http") {
    for (int l = 0; l < lanes; ++l) bodies[l] = BuildJsonBodies(workload, l, lanes, flags.body_bytes);
    shape += ", " + std::to_string(lanes) + " connections, NDJSON bodies of ~" +
             std::to_string(flags.body_bytes >> 10) + " KiB";
  } else {
    bodies = LoadFileBodies(flags.files, flags.points, lanes);
    size_t files = 0;
    for (auto& b : bodies) files += b.size();
    shape = std::to_string(flags.points) + " points in " + std::to_string(files) + " files of " +
            flags.files + ", " + std::to_string(lanes) + " connections";
  }
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  std::vector<std::unique_ptr<HttpConnection>> conns;
  std::string host;
  uint16_t port = 0;
  for (int l = 0; l < lanes; ++l) {
    if (flags.transport == "grpc") {
      channels.push_back(MakeChannel(flags.target, l, flags.tls_ca));
      if (!channels.back()->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10))) {
        std::fprintf(stderr, "ingest_bench: cannot connect to gRPC %s\n", flags.target.c_str());
        return 1;
      }
    } else {
      std::string error;
      conns.push_back(std::make_unique<HttpConnection>());
      if (!SplitHostPort(flags.target, &host, &port) || !conns.back()->Connect(host, port, &error)) {
        std::fprintf(stderr, "ingest_bench: %s\n", error.empty() ? "bad --target" : error.c_str());
        return 1;
      }
    }
  }
  const Span span = SpanOf(workload);
  workload = Workload{};  // the requests hold copies

  HttpLaneOptions http_options;
  http_options.path = flags.path;
  http_options.trainwatch = flags.transport == "http";
  http_options.content_type = !flags.content_type.empty() ? flags.content_type
                              : http_options.trainwatch   ? "application/x-ndjson"
                                                          : "text/plain";
  std::vector<LaneResult> results(static_cast<size_t>(lanes));
  const double server_cpu0 = flags.server_pid ? ProcessCpuSeconds(flags.server_pid).value_or(0) : 0;
  const double client_cpu0 = SelfCpuSeconds();
  const double machine_cpu0 = MachineBusySeconds();
  const auto start = Clock::now();
  {
    std::vector<std::thread> threads;
    const double lane_rate = flags.rate / lanes;
    for (int l = 0; l < lanes; ++l) {
      threads.emplace_back([&, l] {
        Pacer pacer(start, lane_rate, flags.max_seconds);
        if (flags.transport == "grpc") {
          RunGrpcLane(channels[l], proto[l], flags.inflight, pacer, flags.loop ? &span : nullptr, &results[l]);
        } else {
          RunHttpLane(http_options, bodies[l], pacer, *conns[l], &results[l]);
        }
      });
    }
    for (auto& t : threads) t.join();
  }
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  CpuFigures cpu;
  cpu.server = flags.server_pid ? ProcessCpuSeconds(flags.server_pid).value_or(0) - server_cpu0 : 0;
  cpu.client = SelfCpuSeconds() - client_cpu0;
  cpu.others = std::max(0.0, MachineBusySeconds() - machine_cpu0 - cpu.server - cpu.client);
  Report(flags, results, wall, cpu, shape);
  return 0;
}

}  // namespace
}  // namespace trainwatch::bench

int main(int argc, char** argv) { return trainwatch::bench::Main(argc, argv); }

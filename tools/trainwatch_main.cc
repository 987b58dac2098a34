// The `trainwatch` command line: thin adapters over the library.
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "detect/run_detector.h"
#include "ingest/json_scanner.h"

#include "server/config.h"
#include "server/server.h"
#include "server/version.h"
#include "spool_sync.h"

namespace {

constexpr const char* kUsage =
    "usage: trainwatch <command> [flags]\n"
    "commands:\n"
    "  serve     run the server (trainwatch serve --help)\n"
    "  sync      upload spooled batches (offline runs, runs that outlived the server) (sync --help)\n"
    "  detect    run the anomaly detectors over JSON-lines files (detect --help)\n"
    "  version   print the version\n";

int Serve(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      std::fputs(trainwatch::server::ServeUsage().c_str(), stdout);
      return 0;
    }
  }
  auto config = trainwatch::server::LoadServerConfig(args);
  if (!config.ok()) {
    std::fprintf(stderr, "trainwatch serve: %s\n", config.status().message().c_str());
    return 2;
  }
  // Block the signals we handle before any thread starts, then wait for one of them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  auto server = trainwatch::server::Server::Start(*config);
  if (!server.ok()) {
    std::fprintf(stderr, "trainwatch serve: %s\n", server.status().ToString().c_str());
    return 1;
  }
  std::printf("trainwatch is serving http://%s:%u (gRPC %s:%u, data in %s)\n",
              config->listen.host.c_str(), (*server)->http_port(), config->grpc_listen.host.c_str(),
              (*server)->grpc_port(), config->data_dir.c_str());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&signals, &sig);
  trainwatch::Status s = (*server)->Shutdown();
  return s.ok() ? 0 : 1;
}

constexpr const char* kSyncUsage =
    "usage: trainwatch sync DIR [--server URL] [--api-key KEY] [--timeout SECONDS]\n"
    "Uploads what the SDK spooled: DIR is one writer's spool directory or a spool root\n"
    "(default root ~/.cache/trainwatch/spool). Every batch keeps its writer id and sequence, so\n"
    "syncing twice applies nothing twice. Delivered directories are removed.\n"
    "  --server URL      the server's HTTP URL (default $TRAINWATCH_SERVER or http://127.0.0.1:8080)\n"
    "  --api-key KEY     (default $TRAINWATCH_API_KEY)\n"
    "  --timeout S       give up on a writer after S seconds (default 300)\n";

int Sync(const std::vector<std::string>& args) {
  trainwatch::ClientOptions options;
  if (const char* s = std::getenv("TRAINWATCH_SERVER"); s && *s) options.server = s;
  if (const char* k = std::getenv("TRAINWATCH_API_KEY"); k && *k) options.api_key = k;
  options.on_warning = [](trainwatch::WarningKind, const std::string& w) { std::fprintf(stderr, "trainwatch sync: %s\n", w.c_str()); };
  double timeout = 300;
  std::string dir;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string* { return i + 1 < args.size() ? &args[++i] : nullptr; };
    if (a == "--help" || a == "-h") {
      std::fputs(kSyncUsage, stdout);
      return 0;
    } else if (a == "--server" || a == "--api-key" || a == "--timeout") {
      const std::string* v = value();
      if (!v) {
        std::fprintf(stderr, "trainwatch sync: %s needs a value\n%s", a.c_str(), kSyncUsage);
        return 2;
      }
      if (a == "--server") options.server = *v;
      else if (a == "--api-key") options.api_key = *v;
      else timeout = std::atof(v->c_str());
    } else if (dir.empty() && !a.starts_with("-")) {
      dir = a;
    } else {
      std::fprintf(stderr, "trainwatch sync: unexpected argument '%s'\n%s", a.c_str(), kSyncUsage);
      return 2;
    }
  }
  if (dir.empty()) {
    std::fputs(kSyncUsage, stderr);
    return 2;
  }
  auto report = trainwatch::sdk::SyncSpool(dir, options, timeout,
                                           [](const std::string& line) { std::printf("%s\n", line.c_str()); });
  if (!report.ok()) {
    std::fprintf(stderr, "trainwatch sync: %s\n", report.status().ToString().c_str());
    return 1;
  }
  std::printf("%d of %d spool directories delivered (%llu points)\n", report->writers_complete, report->writers,
              static_cast<unsigned long long>(report->points_acked));
  return report->writers_complete == report->writers ? 0 : 1;
}


constexpr const char* kDetectUsage =
    "usage: trainwatch detect [--resolved] FILE.jsonl...\n"
    "Runs the streaming anomaly detectors (docs/design/anomaly-detection.md) over records in the\n"
    "/write JSON-lines format, {\"run\":..,\"step\":..,\"time\":..,\"metrics\":{..}} (NaN, Infinity and\n"
    "-Infinity allowed), each run in file order, and prints one JSON alert per line:\n"
    "{\"run\",\"kind\",\"metric\",\"step\",\"time\",\"value\",\"severity\",\"message\"}.\n"
    "  --resolved  also print when an incident clears (the same fields plus \"state\":\"resolved\")\n";

// One record of a detect input line; metric names are owned here.
struct DetectRecord {
  std::string run;
  int64_t step = 0;
  double time = NAN;
  std::vector<std::pair<std::string, double>> metrics;
};

// Parses one line; returns false with *error set. Unknown fields are skipped, non-numeric metric
// values ignored.
bool ParseDetectRecord(std::string_view text, DetectRecord* record, std::string* error) {
  trainwatch::ingest::JsonScanner scanner(text);
  auto fail = [&](const std::string& why) {
    *error = why.empty() ? scanner.error() : why;
    return false;
  };
  if (!scanner.ExpectChar('{')) return fail("");
  std::string key;
  bool done = false;
  bool has_step = false;
  for (bool first = true;; first = false) {
    if (!scanner.NextKey(&key, &done, first)) return fail("");
    if (done) break;
    double v;
    bool is_int;
    int64_t i;
    std::string_view raw;
    if (key == "run" && scanner.PeekKind() == '"') {
      if (!scanner.ReadString(&record->run)) return fail("");
    } else if (key == "step" && scanner.PeekKind() == 'n') {
      if (!scanner.ReadNumber(&v, &is_int, &i)) return fail("");
      if (!is_int) return fail("field 'step': expected an integer");
      record->step = i;
      has_step = true;
    } else if (key == "time" && scanner.PeekKind() == 'n') {
      if (!scanner.ReadNumber(&record->time, &is_int, &i)) return fail("");
    } else if (key == "metrics" && scanner.PeekKind() == '{') {
      if (!scanner.ExpectChar('{')) return fail("");
      std::string name;
      bool metrics_done = false;
      for (bool first_metric = true;; first_metric = false) {
        if (!scanner.NextKey(&name, &metrics_done, first_metric)) return fail("");
        if (metrics_done) break;
        if (scanner.PeekKind() != 'n') {
          if (!scanner.SkipValue(&raw)) return fail("");
          continue;
        }
        if (!scanner.ReadNumber(&v, &is_int, &i)) return fail("metric '" + name + "': " + scanner.error());
        record->metrics.emplace_back(std::move(name), v);
      }
    } else if (!scanner.SkipValue(&raw)) {
      return fail("");
    }
  }
  if (record->run.empty()) return fail("missing field 'run'");
  if (!has_step) return fail("missing field 'step'");
  return true;
}

int Detect(const std::vector<std::string>& args) {
  if (args.empty()) {
    std::fputs(kDetectUsage, stderr);
    return 2;
  }
  std::vector<std::string> files;
  bool show_resolved = false;
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      std::fputs(kDetectUsage, stdout);
      return 0;
    }
    if (a == "--resolved") {
      show_resolved = true;
    } else {
      files.push_back(a);
    }
  }
  std::map<std::string, std::unique_ptr<trainwatch::detect::RunDetector>, std::less<>> runs;
  std::vector<trainwatch::detect::Alert> alerts;
  std::vector<std::pair<std::string_view, double>> metrics;
  int bad_lines = 0;
  for (const std::string& path : files) {
    std::ifstream in(path);
    if (!in) {
      std::fprintf(stderr, "trainwatch detect: cannot open %s\n", path.c_str());
      return 1;
    }
    std::string line;
    for (int64_t line_no = 1; std::getline(in, line); ++line_no) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      DetectRecord record;
      std::string error;
      if (!ParseDetectRecord(line, &record, &error)) {
        std::fprintf(stderr, "trainwatch detect: %s:%lld: %s\n", path.c_str(), static_cast<long long>(line_no),
                     error.c_str());
        ++bad_lines;
        continue;
      }
      auto it = runs.find(record.run);
      if (it == runs.end()) {
        it = runs.emplace(record.run, std::make_unique<trainwatch::detect::RunDetector>(record.run)).first;
      }
      metrics.clear();
      for (const auto& [name, value] : record.metrics) metrics.emplace_back(name, value);
      alerts.clear();
      // Offline the next record's time plays the server's clock for `stalled`.
      it->second->CheckStalled(record.time, &alerts);
      it->second->Observe(record.step, record.time, metrics, &alerts);
      for (const auto& a : alerts) {
        if (a.state == trainwatch::detect::AlertState::kResolved && !show_resolved) continue;
        std::printf("%s\n", trainwatch::detect::AlertToJson(a).c_str());
      }
    }
  }
  return bad_lines == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  std::string command = args.front();
  args.erase(args.begin());
  if (command == "serve") return Serve(args);
  if (command == "sync") return Sync(args);
  if (command == "detect") return Detect(args);
  if (command == "version" || command == "--version") {
    std::printf("trainwatch %s\n", trainwatch::server::kVersion);
    return 0;
  }
  std::fprintf(stderr, "trainwatch: unknown command '%s'\n%s", command.c_str(), kUsage);
  return 2;
}

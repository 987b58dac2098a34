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

#include "detect_command.h"
#include "export_command.h"
#include "import_command.h"
#include "keys_command.h"
#include "server/config.h"
#include "server/server.h"
#include "server/version.h"
#include "spool_sync.h"
#include "watch_command.h"

namespace {

constexpr const char* kUsage =
    "usage: trainwatch <command> [flags]\n"
    "commands:\n"
    "  serve     run the server (trainwatch serve --help)\n"
    "  sync      upload spooled batches (offline runs, runs that outlived the server) (sync --help)\n"
    "  detect    run the anomaly detectors over JSON-lines files (detect --help)\n"
    "  import    import TensorBoard event files (import --help)\n"
    "  watch     tail TensorBoard event files into the server as they are written (watch --help)\n"
    "  export    write a run as a TensorBoard event file (export --help)\n"
    "  keys      create, list and revoke API keys (keys --help)\n"
    "  audit     print the audit log (audit --help)\n"
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
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  auto server = trainwatch::server::Server::Start(*config);
  if (!server.ok()) {
    std::fprintf(stderr, "trainwatch serve: %s\n", server.status().ToString().c_str());
    return 1;
  }
  std::printf("trainwatch is serving %s://%s:%u (gRPC%s %s:%u, data in %s)\n", (*server)->tls() ? "https" : "http",
              config->listen.host.c_str(), (*server)->http_port(), (*server)->tls() ? " over TLS" : "",
              config->grpc_listen.host.c_str(), (*server)->grpc_port(), config->data_dir.c_str());
  std::fflush(stdout);
  int sig = 0;
  // SIGHUP re-reads the alerting file and the TLS certificate (a bad file is reported and changes
  // nothing; the server logs what it did).
  while (sigwait(&signals, &sig) == 0 && sig == SIGHUP) {
    if (!config->alerting_file.empty()) {
      auto reloaded = (*server)->ReloadAlerting();
      if (!reloaded.ok()) {
        std::fprintf(stderr, "trainwatch serve: SIGHUP: %s\n", reloaded.status().message().c_str());
      }
    }
    (void)(*server)->ReloadTls();
  }
  trainwatch::Status s = (*server)->Shutdown();
  return s.ok() ? 0 : 1;
}

constexpr const char* kSyncUsage =
    "usage: trainwatch sync DIR [--server URL] [--api-key KEY] [--tls-ca FILE] [--timeout SECONDS]\n"
    "Uploads what the SDK spooled: DIR is one writer's spool directory or a spool root\n"
    "(default root ~/.cache/trainwatch/spool). Every batch keeps its writer id and sequence, so\n"
    "syncing twice applies nothing twice. Delivered directories are removed.\n"
    "  --server URL      the server's HTTP URL (default $TRAINWATCH_SERVER or http://127.0.0.1:8080)\n"
    "  --api-key KEY     (default $TRAINWATCH_API_KEY)\n"
    "  --tls-ca FILE     PEM CA bundle of an https:// server (default $TRAINWATCH_TLS_CA, else the system's)\n"
    "  --timeout S       give up on a writer after S seconds (default 300)\n";

int Sync(const std::vector<std::string>& args) {
  trainwatch::ClientOptions options;
  if (const char* s = std::getenv("TRAINWATCH_SERVER"); s && *s) options.server = s;
  if (const char* k = std::getenv("TRAINWATCH_API_KEY"); k && *k) options.api_key = k;
  if (const char* ca = std::getenv("TRAINWATCH_TLS_CA"); ca && *ca) options.tls_ca_file = ca;
  options.on_warning = [](trainwatch::WarningKind, const std::string& w) { std::fprintf(stderr, "trainwatch sync: %s\n", w.c_str()); };
  double timeout = 300;
  std::string dir;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string* { return i + 1 < args.size() ? &args[++i] : nullptr; };
    if (a == "--help" || a == "-h") {
      std::fputs(kSyncUsage, stdout);
      return 0;
    } else if (a == "--server" || a == "--api-key" || a == "--tls-ca" || a == "--timeout") {
      const std::string* v = value();
      if (!v) {
        std::fprintf(stderr, "trainwatch sync: %s needs a value\n%s", a.c_str(), kSyncUsage);
        return 2;
      }
      if (a == "--server") options.server = *v;
      else if (a == "--api-key") options.api_key = *v;
      else if (a == "--tls-ca") options.tls_ca_file = *v;
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
  if (command == "detect") return trainwatch::tools::DetectCommand(args);
  if (command == "import") return trainwatch::tools::ImportCommand(args);
  if (command == "watch") return trainwatch::tools::WatchCommand(args);
  if (command == "export") return trainwatch::tools::ExportCommand(args);
  if (command == "keys") return trainwatch::tools::KeysCommand(args);
  if (command == "audit") return trainwatch::tools::AuditCommand(args);
  if (command == "help" || command == "--help" || command == "-h") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (command == "version" || command == "--version") {
    std::printf("trainwatch %s\n", trainwatch::server::kVersion);
    return 0;
  }
  std::fprintf(stderr, "trainwatch: unknown command '%s'\n%s", command.c_str(), kUsage);
  return 2;
}

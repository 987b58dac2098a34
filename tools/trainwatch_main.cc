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
#include "flags.h"
#include "import_command.h"
#include "import_options.h"
#include "keys_command.h"
#include "report_command.h"
#include "server/config.h"
#include "server/server.h"
#include "server/version.h"
#include "trainwatch/spool.h"
#include "watch_command.h"

namespace {

constexpr const char* kUsage =
    "usage: trainwatch <command> [flags]\n"
    "commands:\n"
    "  serve     run the server (trainwatch serve --help)\n"
    "  sync      upload spooled batches (offline runs, runs that outlived the server) (sync "
    "--help)\n"
    "  detect    run the anomaly detectors over JSON-lines files (detect --help)\n"
    "  import    import TensorBoard event files (import --help)\n"
    "  watch     tail TensorBoard event files into the server as they are written (watch --help)\n"
    "  export    write a run as a TensorBoard event file (export --help)\n"
    "  report    write a run's training report, HTML or PDF (report --help)\n"
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
  std::printf("trainwatch is serving %s://%s:%u (gRPC%s %s:%u, data in %s)\n",
              (*server)->tls() ? "https" : "http", config->listen.host.c_str(),
              (*server)->http_port(), (*server)->tls() ? " over TLS" : "",
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

constexpr const char* kSyncDescription =
    "Uploads what the SDK spooled: DIR is one writer's spool directory or a spool root\n"
    "(the SDK's default root is ~/.cache/trainwatch/spool). Every batch keeps its writer id\n"
    "and sequence, so syncing twice applies nothing twice. Delivered directories are removed.\n";

int Sync(const std::vector<std::string>& args) {
  trainwatch::ClientOptions options;
  double timeout = 300;
  std::string dir;
  trainwatch::tools::FlagSet flags("sync", kSyncDescription);
  flags.AddPositional("DIR", &dir);
  trainwatch::tools::ServerFlags server;
  trainwatch::tools::AddServerFlags(&flags, &server, /*with_project=*/false);
  flags.Add(trainwatch::tools::DurationFlag(
      "--timeout", "S", "give up on a writer after S seconds (default 300)", &timeout));
  if (auto exit_code = trainwatch::tools::ParseCommandLine(flags, args)) return *exit_code;
  options.server = server.server;
  options.api_key = server.api_key;
  options.tls_ca_file = server.tls_ca_file;
  options.on_warning = [](trainwatch::WarningKind, const std::string& w) {
    std::fprintf(stderr, "trainwatch sync: %s\n", w.c_str());
  };
  trainwatch::SpoolSyncReport report = trainwatch::SyncSpool(
      dir, options, timeout, [](const std::string& line) { std::printf("%s\n", line.c_str()); });
  if (!report.ok()) {
    std::fprintf(stderr, "trainwatch sync: %s\n", report.error.c_str());
    return 1;
  }
  std::printf("%d of %d spool directories delivered (%llu points)\n", report.writers_complete,
              report.writers, static_cast<unsigned long long>(report.points_acked));
  return report.writers_complete == report.writers ? 0 : 1;
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
  if (command == "report") return trainwatch::tools::ReportCommand(args);
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

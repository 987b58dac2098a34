// The `trainwatch` command line: thin adapters over the library.
#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

#include "server/config.h"
#include "server/server.h"

namespace {

constexpr const char* kUsage =
    "usage: trainwatch <command> [flags]\n"
    "commands:\n"
    "  serve     run the server (trainwatch serve --help)\n"
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
  if (command == "version" || command == "--version") {
    std::puts("trainwatch 0.1.0");
    return 0;
  }
  std::fprintf(stderr, "trainwatch: unknown command '%s'\n%s", command.c_str(), kUsage);
  return 2;
}

#include "cluster/testing/nats_cluster.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <regex>
#include <thread>

#include "common/mutex.h"

extern char** environ;

namespace trainwatch::cluster::test {
namespace {

// How long a node may take to start (it is a local process; minutes means it is broken).
constexpr auto kStartTimeout = std::chrono::seconds(60);

// The port in a log line "... on 127.0.0.1:PORT", 0 if `log` has no such line for `what`.
int PortFromLog(const std::string& log, const std::string& what) {
  std::smatch m;
  const std::regex line(what + " on 127\\.0\\.0\\.1:([0-9]+)");
  return std::regex_search(log, m, line) ? std::stoi(m[1]) : 0;
}

}  // namespace

// One nats-server process and the thread that reads its log (stderr) into `log`.
struct NatsCluster::Node {
  pid_t pid = -1;
  int client_port = -1;  // -1: let nats-server choose (first start)
  int route_port = 0;
  std::thread reader;
  mutable Mutex mu;
  std::condition_variable changed;
  std::string log TW_GUARDED_BY(mu);
  bool exited TW_GUARDED_BY(mu) = true;  // the log's pipe closed

  void Read(int fd) TW_EXCLUDES(mu) {
    char buffer[4096];
    ssize_t n;
    while ((n = ::read(fd, buffer, sizeof buffer)) > 0) {
      MutexLock lock(mu);
      log.append(buffer, static_cast<size_t>(n));
      changed.notify_all();
    }
    ::close(fd);
    MutexLock lock(mu);
    exited = true;
    changed.notify_all();
  }

  // Waits, after `from` bytes of log, for the last line a starting server writes (it listens for
  // routes after it says it is ready); the log so far if it came.
  Result<std::string> WaitReady(size_t from) TW_EXCLUDES(mu) {
    static const std::string kLast = "Listening for route connections";
    MutexLock lock(mu);
    bool ready = changed.wait_for(lock.native(), kStartTimeout, [&]() TW_REQUIRES(mu) {
      return exited || log.find(kLast, from) != std::string::npos;
    });
    if (!ready || log.find(kLast, from) == std::string::npos) {
      return Status::Unavailable("nats-server did not start; its log:\n" + log.substr(from));
    }
    return log;
  }

  void Stop(int signal) {
    if (pid > 0) {
      ::kill(pid, signal);
      int status = 0;
      ::waitpid(pid, &status, 0);
      pid = -1;
    }
    if (reader.joinable()) reader.join();
  }
};

Result<std::unique_ptr<NatsCluster>> NatsCluster::Start(int nodes, const std::string& dir) {
  if (::access(kNatsServer, X_OK) != 0) {
    return Status::NotFound(std::string(kNatsServer) +
                            " is missing: scripts/install-deps.sh installs nats-server");
  }
  std::unique_ptr<NatsCluster> cluster(new NatsCluster(dir));
  for (int i = 0; i < nodes; ++i) cluster->nodes_.push_back(std::make_unique<Node>());
  // A JetStream cluster needs a configured route to start; node 0's is to nowhere (port 1) until
  // the others route to it.
  if (Status s = cluster->Launch(0, {"nats://127.0.0.1:1"}); !s.ok()) return s;
  const std::string seed = "nats://127.0.0.1:" + std::to_string(cluster->nodes_[0]->route_port);
  for (int i = 1; i < nodes; ++i) {
    if (Status s = cluster->Launch(i, {seed}); !s.ok()) return s;
  }
  return cluster;
}

NatsCluster::NatsCluster(std::string dir) : dir_(std::move(dir)) {}

NatsCluster::~NatsCluster() {
  for (auto& node : nodes_) node->Stop(SIGKILL);
}

Status NatsCluster::Launch(int i, const std::vector<std::string>& routes) {
  Node& node = *nodes_[i];
  const std::string data = dir_ + "/" + Name(i);
  ::mkdir(data.c_str(), 0755);
  // Limits in a file (there are no flags for them): the defaults reserve most of RAM and disk.
  const std::string config = data + ".conf";
  std::ofstream(config) << "jetstream {\n  store_dir: \"" << data
                        << "\"\n  max_memory_store: 64MB\n"
                        << "  max_file_store: 1GB\n}\n";
  std::string route_list;
  for (const std::string& r : routes) route_list += (route_list.empty() ? "" : ",") + r;
  std::vector<std::string> args = {kNatsServer,
                                   "-c",
                                   config,
                                   "-a",
                                   "127.0.0.1",
                                   "-p",
                                   std::to_string(node.client_port),
                                   "--server_name",
                                   Name(i),
                                   "--cluster_name",
                                   "tw",
                                   "--cluster",
                                   "nats://127.0.0.1:-1",
                                   "--routes",
                                   route_list,
                                   "-js"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Status::IoErrorFromErrno("pipe", errno);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  int err = posix_spawn(&node.pid, kNatsServer, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (err != 0) {
    ::close(fds[0]);
    node.pid = -1;
    return Status::IoErrorFromErrno("start nats-server", err);
  }
  size_t from;
  {
    MutexLock lock(node.mu);
    from = node.log.size();
    node.exited = false;
  }
  node.reader = std::thread([&node, fd = fds[0]] { node.Read(fd); });
  Result<std::string> log = node.WaitReady(from);
  if (!log.ok()) return log.status();
  const std::string started = log->substr(from);
  node.client_port = PortFromLog(started, "Listening for client connections");
  node.route_port = PortFromLog(started, "Listening for route connections");
  if (node.client_port == 0 || node.route_port == 0) {
    return Status::Internal("no ports in nats-server's log:\n" + started);
  }
  return Status::Ok();
}

std::vector<std::string> NatsCluster::ClientUrls() const {
  std::vector<std::string> urls;
  for (int i = 0; i < size(); ++i) urls.push_back(ClientUrl(i));
  return urls;
}

std::string NatsCluster::ClientUrl(int i) const {
  return "nats://127.0.0.1:" + std::to_string(nodes_[i]->client_port);
}

int NatsCluster::IndexOf(const std::string& name) const {
  for (int i = 0; i < size(); ++i) {
    if (Name(i) == name) return i;
  }
  return -1;
}

void NatsCluster::Kill(int i) { nodes_[i]->Stop(SIGKILL); }

bool NatsCluster::running(int i) const { return nodes_[i]->pid > 0; }

Status NatsCluster::Restart(int i) {
  if (running(i)) return Status::InvalidArgument(Name(i) + " is running");
  std::vector<std::string> routes;
  for (int j = 0; j < size(); ++j) {
    if (j != i) routes.push_back("nats://127.0.0.1:" + std::to_string(nodes_[j]->route_port));
  }
  return Launch(i, routes);
}

std::string NatsCluster::Log(int i) const {
  const Node& node = *nodes_[i];
  MutexLock lock(node.mu);
  return node.log;
}

}  // namespace trainwatch::cluster::test

#include "cluster/testing/nats_cluster.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
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

// How long a node may take to start or to log an awaited event (it is a local process; a minute
// means it is broken).
constexpr auto kEventTimeout = std::chrono::seconds(60);

// The port in a log line "... on 127.0.0.1:PORT", 0 if `log` has no such line for `what`.
int PortFromLog(const std::string& log, const std::string& what) {
  std::smatch m;
  const std::regex line(what + " on 127\\.0\\.0\\.1:([0-9]+)");
  return std::regex_search(log, m, line) ? std::stoi(m[1]) : 0;
}

}  // namespace

std::string StreamLeaderLine(const std::string& name) {
  return "new stream leader for '\\$G > " + name + "'";
}

// One nats-server process and the thread that reads its log (stderr) into the cluster's logs_.
struct NatsCluster::Node {
  pid_t pid = -1;
  int client_port = -1;  // -1: let nats-server choose (first start)
  int route_port = 0;
  std::thread reader;

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

void NatsCluster::ReadLog(int i, int fd) {
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0) {
    MutexLock lock(mu_);
    logs_[i].append(buffer, static_cast<size_t>(n));
    logged_.notify_all();
  }
  ::close(fd);
  MutexLock lock(mu_);
  exited_[i] = true;
  logged_.notify_all();
}

// The last line a starting server writes is that it listens for routes (after "Server is ready").
Result<std::string> NatsCluster::WaitReady(int i, size_t from) {
  static const std::string kLast = "Listening for route connections";
  MutexLock lock(mu_);
  logged_.wait_for(lock.native(), kEventTimeout, [&]() TW_REQUIRES(mu_) {
    return exited_[i] || logs_[i].find(kLast, from) != std::string::npos;
  });
  if (logs_[i].find(kLast, from) == std::string::npos) {
    return Status::Unavailable("nats-server did not start; its log:\n" + logs_[i].substr(from));
  }
  return logs_[i].substr(from);
}

NatsCluster::LogMark NatsCluster::MarkLogs() const {
  MutexLock lock(mu_);
  LogMark mark;
  for (const std::string& log : logs_) mark.push_back(log.size());
  return mark;
}

Result<int> NatsCluster::WaitForLog(const LogMark& mark, const std::string& pattern,
                                    const std::vector<int>& nodes) const {
  std::vector<int> which = nodes;
  if (which.empty()) {
    for (int i = 0; i < size(); ++i) which.push_back(i);
  }
  const std::regex line(pattern);
  int found = -1;
  MutexLock lock(mu_);
  logged_.wait_for(lock.native(), kEventTimeout, [&]() TW_REQUIRES(mu_) {
    for (int i : which) {
      const size_t from = i < static_cast<int>(mark.size()) ? mark[i] : 0;
      if (std::regex_search(logs_[i].begin() + static_cast<std::ptrdiff_t>(from), logs_[i].end(),
                            line)) {
        found = i;
        return true;
      }
    }
    return false;
  });
  if (found >= 0) return found;
  return Status::Unavailable("no node logged /" + pattern + "/ within a minute; their logs:\n" +
                             LogsSince(mark, which));
}

std::string NatsCluster::LogsSince(const LogMark& mark, const std::vector<int>& nodes) const {
  std::string out;
  for (int i : nodes) {
    const size_t from = i < static_cast<int>(mark.size()) ? mark[i] : 0;
    out += "--- " + Name(i) + "\n" + logs_[i].substr(std::min(from, logs_[i].size()));
  }
  return out;
}

Result<std::unique_ptr<NatsCluster>> NatsCluster::Start(int nodes, const std::string& dir) {
  if (::access(kNatsServer, X_OK) != 0) {
    return Status::NotFound(std::string(kNatsServer) +
                            " is missing: scripts/install-deps.sh installs nats-server");
  }
  std::unique_ptr<NatsCluster> cluster(new NatsCluster(dir));
  for (int i = 0; i < nodes; ++i) cluster->nodes_.push_back(std::make_unique<Node>());
  {
    MutexLock lock(cluster->mu_);
    cluster->logs_.resize(static_cast<size_t>(nodes));
    cluster->exited_.assign(static_cast<size_t>(nodes), true);
  }
  const LogMark start = cluster->MarkLogs();
  // A JetStream cluster needs a configured route to start; node 0's is to nowhere (port 1) until
  // the others route to it.
  if (Status s = cluster->Launch(0, {"nats://127.0.0.1:1"}); !s.ok()) return s;
  const std::string seed = "nats://127.0.0.1:" + std::to_string(cluster->nodes_[0]->route_port);
  for (int i = 1; i < nodes; ++i) {
    if (Status s = cluster->Launch(i, {seed}); !s.ok()) return s;
  }
  for (int i = 0; i < nodes; ++i) {
    if (auto known = cluster->WaitForLog(start, kMetaLeaderLine, {i}); !known.ok()) {
      return known.status();
    }
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
    MutexLock lock(mu_);
    from = logs_[i].size();
    exited_[i] = false;
  }
  node.reader = std::thread([this, i, fd = fds[0]] { ReadLog(i, fd); });
  Result<std::string> started = WaitReady(i, from);
  if (!started.ok()) return started.status();
  node.client_port = PortFromLog(*started, "Listening for client connections");
  node.route_port = PortFromLog(*started, "Listening for route connections");
  if (node.client_port == 0 || node.route_port == 0) {
    return Status::Internal("no ports in nats-server's log:\n" + *started);
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
  const LogMark mark = MarkLogs();
  if (Status s = Launch(i, routes); !s.ok()) return s;
  return WaitForLog(mark, kMetaLeaderLine, {i}).status();
}

std::string NatsCluster::Log(int i) const {
  MutexLock lock(mu_);
  return logs_[i];
}

}  // namespace trainwatch::cluster::test

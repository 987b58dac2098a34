// A NATS JetStream cluster of Debian's nats-server processes on 127.0.0.1, for tests (the real
// engine cluster mode runs on, never a stand-in). Every port is chosen by nats-server itself
// (-1) and read back from its log, so nothing races for a free port; node 0 starts first and the
// others route to it (gossip connects the rest). A node can be killed (SIGKILL) and restarted on
// its old client port with its data.
//
// What nats-server does on its own (electing a metadata, stream or consumer leader) it logs, and
// the fixture reads every node's log as it is written: tests wait for those lines (WaitForLog)
// rather than retrying on a timer. nats-server 2.9.10 logs, for example:
//   "Self is new JetStream cluster metadata leader" / "JetStream cluster new metadata leader:
//   n0/tw" "JetStream cluster new stream leader for '$G > NAME'" "JetStream cluster new consumer
//   leader for '$G > STREAM > NAME'"
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <memory>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"

namespace trainwatch::cluster::test {

// Where Debian installs nats-server (the test suite fails, never skips, when it is missing).
inline constexpr const char* kNatsServer = "/usr/sbin/nats-server";

// A line a node logs once it knows the cluster's metadata leader (itself or another), at start and
// after every election: JetStream requests through it are answered from then on.
inline constexpr const char* kMetaLeaderLine = "new (JetStream cluster )?metadata leader";
// The line the new leader of stream `name` logs once elected (a regex, like WaitForLog's).
std::string StreamLeaderLine(const std::string& name);

class NatsCluster {
 public:
  // How far every node's log had come when it was taken: WaitForLog looks at what came after.
  using LogMark = std::vector<size_t>;

  // Starts `nodes` servers with data under `dir` and waits until each says it is ready and knows
  // the metadata leader (a replicated stream can be created from then on).
  static Result<std::unique_ptr<NatsCluster>> Start(int nodes, const std::string& dir);
  ~NatsCluster();
  NatsCluster(const NatsCluster&) = delete;
  NatsCluster& operator=(const NatsCluster&) = delete;

  int size() const { return static_cast<int>(nodes_.size()); }
  // nats://127.0.0.1:PORT of every node, killed ones included (clients fail over).
  std::vector<std::string> ClientUrls() const;
  std::string ClientUrl(int i) const;
  // "n<i>": the server name (what stream info reports as a leader).
  static std::string Name(int i) { return "n" + std::to_string(i); }
  // The index of the node named `name`, -1 if none.
  int IndexOf(const std::string& name) const;

  // SIGKILL, and waits for the process to be gone.
  void Kill(int i);
  // Starts a killed node again, on its client port, with its data and routes to the others, and
  // waits until it knows the metadata leader (it has rejoined the cluster).
  Status Restart(int i);
  bool running(int i) const;

  // Everything node i wrote to its log so far.
  std::string Log(int i) const;

  LogMark MarkLogs() const;
  // Waits until a line that one of `nodes` (every node if empty) logged after `mark` matches
  // `pattern` (an ECMAScript regex); returns that node's index. Unavailable after a minute (the
  // events awaited come within seconds even on a loaded machine: a minute means something is
  // broken), with what each node logged since the mark. A node killed meanwhile logs nothing more.
  Result<int> WaitForLog(const LogMark& mark, const std::string& pattern,
                         const std::vector<int>& nodes = {}) const;

 private:
  struct Node;
  explicit NatsCluster(std::string dir);
  Status Launch(int i, const std::vector<std::string>& routes);
  void ReadLog(int i, int fd) TW_EXCLUDES(mu_);  // node i's log reader thread
  // Waits for the line a starting node writes last, after `from`: its log since then.
  Result<std::string> WaitReady(int i, size_t from) TW_EXCLUDES(mu_);
  std::string LogsSince(const LogMark& mark, const std::vector<int>& nodes) const TW_REQUIRES(mu_);

  std::string dir_;
  std::vector<std::unique_ptr<Node>> nodes_;  // fixed at Start
  mutable Mutex mu_;
  mutable std::condition_variable logged_;            // a log grew or its pipe closed
  std::vector<std::string> logs_ TW_GUARDED_BY(mu_);  // by node, since the first start
  std::vector<bool> exited_ TW_GUARDED_BY(mu_);       // node i's log pipe closed
};

}  // namespace trainwatch::cluster::test

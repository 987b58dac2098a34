// A NATS JetStream cluster of Debian's nats-server processes on 127.0.0.1, for tests (the real
// engine cluster mode runs on, never a stand-in). Every port is chosen by nats-server itself
// (-1) and read back from its log, so nothing races for a free port; node 0 starts first and the
// others route to it (gossip connects the rest). A node can be killed (SIGKILL) and restarted on
// its old client port with its data.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace trainwatch::cluster::test {

// Where Debian installs nats-server (the test suite fails, never skips, when it is missing).
inline constexpr const char* kNatsServer = "/usr/sbin/nats-server";

class NatsCluster {
 public:
  // Starts `nodes` servers with data under `dir` and waits until each says it is ready.
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
  // Starts a killed node again, on its client port, with its data and routes to the others.
  Status Restart(int i);
  bool running(int i) const;

  // Everything node i wrote to its log so far.
  std::string Log(int i) const;

 private:
  struct Node;
  explicit NatsCluster(std::string dir);
  Status Launch(int i, const std::vector<std::string>& routes);

  std::string dir_;
  std::vector<std::unique_ptr<Node>> nodes_;
};

}  // namespace trainwatch::cluster::test

// Which trainwatch nodes are alive in a cluster, and which node should own each partition
// (docs/cluster.md). Membership is a key per node in a JetStream KV bucket whose TTL is the
// lease time: a node is a member while it keeps writing its key.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cluster/key_value.h"
#include "common/status.h"

namespace trainwatch::cluster {

class Membership {
 public:
  // `kv` (not owned): the members bucket, opened with the lease time as its TTL.
  Membership(KeyValue* kv, std::string node) : kv_(kv), node_(std::move(node)) {}

  // Writes this node's key (joins, or stays a member).
  Status Heartbeat();
  // Leaves at once (a clean shutdown), rather than when the key expires.
  Status Leave();
  // The live members' names, sorted.
  Result<std::vector<std::string>> Live();

  const std::string& node() const { return node_; }

 private:
  KeyValue* kv_;
  std::string node_;
};

// The member that should own partition `p`: rendezvous (highest random weight) hashing of
// (member, p), so that every member computes the same answer from the same member list, the
// partitions spread evenly, and a member joining or leaving moves only the partitions it gains
// or loses. "" when `members` is empty.
std::string PreferredOwner(uint32_t p, const std::vector<std::string>& members);

}  // namespace trainwatch::cluster

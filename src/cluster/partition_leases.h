// Partition ownership in cluster mode, held as leases in a JetStream key-value bucket whose keys
// expire (docs/cluster.md). Key "p<N>" holds the name of the node that owns partition N. A node
// takes a free partition with a create (only one creator wins), keeps it by rewriting the key at
// the revision it last wrote before the bucket's TTL runs out, and loses it when it stops: the
// key expires and another node's create wins. No consensus of our own: JetStream's replicated,
// revisioned writes decide every race.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cluster/key_value.h"
#include "common/status.h"

namespace trainwatch::cluster {

class PartitionLeases {
 public:
  // `kv` (not owned) is the lease bucket, opened with the lease time as its TTL.
  PartitionLeases(KeyValue* kv, std::string node) : kv_(kv), node_(std::move(node)) {}

  // Takes partition `p` if no node holds it. True when this node holds it now (also when it
  // already did); false when another node does.
  Result<bool> TryAcquire(uint32_t p);
  // Rewrites the lease of every partition held, at the revision last written. Returns the
  // partitions lost since the last renewal (their lease expired, or another node holds it now);
  // they are no longer held. Unavailable (NATS unreachable) loses nothing yet: the leases run
  // until their TTL.
  Result<std::vector<uint32_t>> Renew();
  // Gives `p` up at once (its key is deleted), e.g. to hand it to a node that rejoined.
  Status Release(uint32_t p);
  // The node holding `p`, "" when none does. Read from any replica of the bucket, so it may lag
  // the latest write a moment: decisions go through TryAcquire/Renew, which the stream's leader
  // orders.
  Result<std::string> Owner(uint32_t p);

  // The partitions this node holds, with the revision of its last write to each.
  const std::map<uint32_t, uint64_t>& held() const { return held_; }
  const std::string& node() const { return node_; }

  static std::string Key(uint32_t p) { return "p" + std::to_string(p); }

 private:
  KeyValue* kv_;
  std::string node_;
  std::map<uint32_t, uint64_t> held_;
};

}  // namespace trainwatch::cluster

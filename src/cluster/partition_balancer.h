// One node's side of partition ownership (docs/cluster.md): each Step heartbeats the node's
// membership, renews its leases, takes the free partitions it is the preferred owner of
// (PreferredOwner over the live members), and hands back partitions whose preferred owner is
// another live member, such as a node that rejoined. Every node runs the same rule on the same
// member list, so they converge on the rendezvous assignment without talking to each other; the
// leases' compare-and-set writes keep a partition with at most one holder at any time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cluster/membership.h"
#include "cluster/partition_leases.h"
#include "common/status.h"

namespace trainwatch::cluster {

class PartitionBalancer {
 public:
  // `membership` and `leases` (not owned) are this node's. Step must run well within the lease
  // time (a third of it leaves room for one slow step).
  PartitionBalancer(Membership* membership, PartitionLeases* leases, uint32_t partitions)
      : membership_(membership), leases_(leases), partitions_(partitions) {}

  struct Changes {
    std::vector<uint32_t> gained;      // now held: start applying them (from their checkpoint)
    std::vector<uint32_t> lost;        // no longer held (expired, taken, or handed back): stop
    std::vector<std::string> members;  // the live members the step went by, sorted
  };
  // Unavailable (NATS unreachable) changes nothing held: the leases run on until their TTL, and
  // the caller must stop applying a partition whose lease it could not renew in time.
  Result<Changes> Step();

 private:
  Membership* membership_;
  PartitionLeases* leases_;
  const uint32_t partitions_;
};

}  // namespace trainwatch::cluster

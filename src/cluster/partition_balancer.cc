#include "cluster/partition_balancer.h"

#include <string>

namespace trainwatch::cluster {

Result<PartitionBalancer::Changes> PartitionBalancer::Step() {
  TW_RETURN_IF_ERROR(membership_->Heartbeat());
  Result<std::vector<uint32_t>> expired = leases_->Renew();
  if (!expired.ok()) return expired.status();
  Changes changes;
  changes.lost = std::move(*expired);
  Result<std::vector<std::string>> members = membership_->Live();
  if (!members.ok()) return members.status();
  for (uint32_t p = 0; p < partitions_; ++p) {
    const std::string preferred = PreferredOwner(p, *members);
    const bool held = leases_->held().contains(p);
    if (preferred == leases_->node()) {
      if (held) continue;
      Result<bool> taken = leases_->TryAcquire(p);
      if (!taken.ok()) return taken.status();
      if (*taken) changes.gained.push_back(p);
    } else if (held && !preferred.empty()) {
      // Its preferred owner is a live member (it heartbeats): hand it over.
      TW_RETURN_IF_ERROR(leases_->Release(p));
      changes.lost.push_back(p);
    }
  }
  changes.members = std::move(*members);
  return changes;
}

}  // namespace trainwatch::cluster

#include "cluster/partition_leases.h"

namespace trainwatch::cluster {

Result<bool> PartitionLeases::TryAcquire(uint32_t p) {
  if (held_.contains(p)) return true;
  Result<uint64_t> created = kv_->Create(Key(p), node_);
  if (created.ok()) {
    held_[p] = *created;
    return true;
  }
  if (created.status().code() == StatusCode::kAlreadyExists) return false;
  return created.status();
}

Result<std::vector<uint32_t>> PartitionLeases::Renew() {
  std::vector<uint32_t> lost;
  for (auto it = held_.begin(); it != held_.end();) {
    Result<uint64_t> renewed = kv_->Update(Key(it->first), node_, it->second);
    if (renewed.ok()) {
      it->second = *renewed;
      ++it;
    } else if (renewed.status().code() == StatusCode::kAlreadyExists) {
      lost.push_back(it->first);
      it = held_.erase(it);
    } else {
      return renewed.status();
    }
  }
  return lost;
}

Status PartitionLeases::Release(uint32_t p) {
  auto it = held_.find(p);
  if (it == held_.end()) return Status::Ok();
  // Deleted only if still ours: an update at our revision first proves it (a lease that already
  // expired and was taken must not be deleted from under its new owner).
  Result<uint64_t> mine = kv_->Update(Key(p), node_, it->second);
  held_.erase(it);
  if (!mine.ok())
    return mine.status().code() == StatusCode::kAlreadyExists ? Status::Ok() : mine.status();
  return kv_->Delete(Key(p));
}

Result<std::string> PartitionLeases::Owner(uint32_t p) {
  Result<KeyValueEntry> entry = kv_->Get(Key(p));
  if (entry.ok()) return entry->value;
  if (entry.status().code() == StatusCode::kNotFound) return std::string();
  return entry.status();
}

}  // namespace trainwatch::cluster

#include "cluster/membership.h"

#include <algorithm>

namespace trainwatch::cluster {
namespace {

constexpr std::string_view kPrefix = "node.";

// SplitMix64's finaliser over FNV-1a of the name and the partition: a well-mixed 64-bit weight.
uint64_t Weight(std::string_view member, uint32_t p) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : member) {
    h ^= c;
    h *= 1099511628211ull;
  }
  h ^= p;
  h += 0x9e3779b97f4a7c15ull;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

}  // namespace

Status Membership::Heartbeat() {
  Result<uint64_t> put = kv_->Put(std::string(kPrefix) + node_, node_);
  return put.status();
}

Status Membership::Leave() { return kv_->Delete(std::string(kPrefix) + node_); }

Result<std::vector<std::string>> Membership::Live() {
  Result<std::vector<std::string>> keys = kv_->Keys();
  if (!keys.ok()) return keys.status();
  std::vector<std::string> members;
  for (const std::string& key : *keys) {
    if (key.starts_with(kPrefix)) members.push_back(key.substr(kPrefix.size()));
  }
  std::sort(members.begin(), members.end());
  return members;
}

std::string PreferredOwner(uint32_t p, const std::vector<std::string>& members) {
  std::string best;
  uint64_t best_weight = 0;
  for (const std::string& m : members) {
    uint64_t w = Weight(m, p);
    if (best.empty() || w > best_weight || (w == best_weight && m < best)) {
      best = m;
      best_weight = w;
    }
  }
  return best;
}

}  // namespace trainwatch::cluster

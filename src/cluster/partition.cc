#include "cluster/partition.h"

namespace trainwatch::cluster {
namespace {

constexpr uint64_t kFnvOffset = 14695981039346656037ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

uint64_t Fnv1a(uint64_t h, std::string_view bytes) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= kFnvPrime;
  }
  return h;
}

}  // namespace

uint32_t PartitionOf(std::string_view project, std::string_view run, uint32_t partitions) {
  if (partitions <= 1) return 0;
  // The separator keeps ("ab", "c") and ("a", "bc") apart; it cannot occur in a name.
  uint64_t h = Fnv1a(Fnv1a(Fnv1a(kFnvOffset, project), std::string_view("\x1f", 1)), run);
  return static_cast<uint32_t>(h % partitions);
}

std::string IngestSubject(uint32_t partition) { return "tw.ingest.p" + std::to_string(partition); }

}  // namespace trainwatch::cluster

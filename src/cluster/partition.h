// Which partition a run belongs to in cluster mode, and the stream subject of a partition
// (docs/cluster.md). Every node must compute the same answer for the lifetime of a cluster:
// the hash is spelled out here (FNV-1a, 64 bits) rather than taken from std::hash.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace trainwatch::cluster {

// All of a run's batches go to one partition, so one node applies them in order.
uint32_t PartitionOf(std::string_view project, std::string_view run, uint32_t partitions);

// "tw.ingest.p<partition>": the subject a partition's batches are published on.
std::string IngestSubject(uint32_t partition);

}  // namespace trainwatch::cluster

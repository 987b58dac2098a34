// RunState: what the SDK's core knows about one run it writes. Shared by the user's Run handle and
// the core's run registry (records point at it), so it outlives whichever lets go first.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "name_table.h"
#include "trainwatch/v1/ingest.pb.h"

namespace trainwatch::sdk {

class RunState {
 public:
  RunState(std::string project, std::string id) : project(std::move(project)), id(std::move(id)) {}
  // A run written by one rank of a distributed job: every batch of it carries `rank`.
  RunState(std::string project, std::string id, v1::RankInfo rank)
      : project(std::move(project)), id(std::move(id)), distributed(true), rank(std::move(rank)) {}
  RunState(const RunState&) = delete;
  RunState& operator=(const RunState&) = delete;

  // Sets the run's project, id and (when distributed) rank on `batch`.
  void Address(v1::RunBatch* batch) const {
    batch->set_project(project);
    batch->set_run(id);
    if (distributed) *batch->mutable_rank() = rank;
  }
  // A rank other than 0 leaves the run's metadata to rank 0 (RunOptions::rank).
  bool sends_run_metadata() const { return !distributed || rank.rank() == 0; }

  const std::string project;
  const std::string id;
  const bool distributed = false;
  const v1::RankInfo rank;
  NameTable names;
  std::atomic<bool> finished{false};
  std::atomic<bool> handle_alive{true};  // the user's Run still exists: heartbeats continue
};

}  // namespace trainwatch::sdk

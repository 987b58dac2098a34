// Run metadata: what a run is, as opposed to what it logged.
#pragma once

#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace trainwatch::storage {

enum class RunStatus { kRunning, kFinished, kCrashed, kStalled };

std::string_view RunStatusName(RunStatus status);
// Parses "running", "finished", "crashed", "stalled".
bool ParseRunStatus(std::string_view text, RunStatus* status);

struct RunInfo {
  std::string project;
  std::string id;
  std::string name;  // display name; the id until one is set
  std::string group;
  std::set<std::string> tags;
  nlohmann::json config = nlohmann::json::object();
  RunStatus status = RunStatus::kRunning;
  double start_time = 0;       // unix seconds; the first point's time unless set
  double end_time = 0;         // 0 while running
  double last_write_time = 0;  // time of the newest point
  std::string host;
  // Liveness: the server's time of the newest heartbeat, and the interval the writer promised
  // (0: the writer sends no heartbeats, and the run is never declared crashed for silence).
  double last_heartbeat = 0;
  double heartbeat_interval = 0;
  bool has_graph = false;  // a model graph is stored for the run (under its own key)
  // A distributed run (docs/distributed.md): the ranks that have written to it, and the job's
  // world size (the largest a rank announced, at least the number of ranks). Both 0 for a run
  // that is not distributed. Derived from the ranks table (RankState records), not stored here.
  uint32_t rank_count = 0;
  uint32_t world_size = 0;

  nlohmann::json ToJson() const;
  static Result<RunInfo> FromJson(const nlohmann::json& j);
};

// One rank of a distributed run: a row of the run's ranks table (store key "k").
struct RankState {
  uint32_t rank = 0;
  uint32_t world_size = 0;  // as the rank announced it; 0: unknown
  uint32_t local_rank = 0;
  std::string host;
  int64_t last_step = -1;         // the newest training step the rank wrote; -1: none yet
  double last_write_time = 0;     // that step's time
  double last_heartbeat = 0;      // server time of the rank's newest heartbeat; 0: none
  double heartbeat_interval = 0;  // as the rank announced it; 0: it sends no heartbeats
  bool finished = false;          // the rank said status=finished

  nlohmann::json ToJson() const;
  static Result<RankState> FromJson(const nlohmann::json& j);
};

// Merges `patch` into `target` recursively: objects merge key by key, anything else replaces.
void MergeConfig(nlohmann::json* target, const nlohmann::json& patch);

}  // namespace trainwatch::storage

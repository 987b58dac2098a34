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
  double start_time = 0;  // unix seconds; the first point's time unless set
  double end_time = 0;    // 0 while running
  double last_write_time = 0;  // time of the newest point
  std::string host;
  // Liveness: the server's time of the newest heartbeat, and the interval the writer promised
  // (0: the writer sends no heartbeats, and the run is never declared crashed for silence).
  double last_heartbeat = 0;
  double heartbeat_interval = 0;
  bool has_graph = false;  // a model graph is stored for the run (under its own key)

  nlohmann::json ToJson() const;
  static Result<RunInfo> FromJson(const nlohmann::json& j);
};

// Merges `patch` into `target` recursively: objects merge key by key, anything else replaces.
void MergeConfig(nlohmann::json* target, const nlohmann::json& patch);

}  // namespace trainwatch::storage

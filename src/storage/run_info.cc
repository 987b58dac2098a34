#include "storage/run_info.h"

namespace trainwatch::storage {

std::string_view RunStatusName(RunStatus status) {
  switch (status) {
    case RunStatus::kRunning:
      return "running";
    case RunStatus::kFinished:
      return "finished";
    case RunStatus::kCrashed:
      return "crashed";
    case RunStatus::kStalled:
      return "stalled";
  }
  return "running";
}

bool ParseRunStatus(std::string_view text, RunStatus* status) {
  if (text == "running")
    *status = RunStatus::kRunning;
  else if (text == "finished")
    *status = RunStatus::kFinished;
  else if (text == "crashed")
    *status = RunStatus::kCrashed;
  else if (text == "stalled")
    *status = RunStatus::kStalled;
  else
    return false;
  return true;
}

nlohmann::json RunInfo::ToJson() const {
  return nlohmann::json{{"project", project},
                        {"id", id},
                        {"name", name},
                        {"group", group},
                        {"tags", tags},
                        {"config", config},
                        {"status", RunStatusName(status)},
                        {"start_time", start_time},
                        {"end_time", end_time},
                        {"last_write_time", last_write_time},
                        {"host", host},
                        {"last_heartbeat", last_heartbeat},
                        {"heartbeat_interval", heartbeat_interval},
                        {"has_graph", has_graph}};
}

Result<RunInfo> RunInfo::FromJson(const nlohmann::json& j) {
  RunInfo info;
  try {
    info.project = j.at("project").get<std::string>();
    info.id = j.at("id").get<std::string>();
    info.name = j.value("name", info.id);
    info.group = j.value("group", "");
    info.tags = j.value("tags", std::set<std::string>{});
    info.config = j.value("config", nlohmann::json::object());
    if (!ParseRunStatus(j.value("status", "running"), &info.status)) {
      return Status::Corruption("run record has an unknown status");
    }
    info.start_time = j.value("start_time", 0.0);
    info.end_time = j.value("end_time", 0.0);
    info.last_write_time = j.value("last_write_time", 0.0);
    info.host = j.value("host", "");
    info.last_heartbeat = j.value("last_heartbeat", 0.0);
    info.heartbeat_interval = j.value("heartbeat_interval", 0.0);
    info.has_graph = j.value("has_graph", false);
  } catch (const nlohmann::json::exception& e) {
    return Status::Corruption(std::string("run record: ") + e.what());
  }
  return info;
}

nlohmann::json RankState::ToJson() const {
  return nlohmann::json{{"rank", rank},
                        {"world_size", world_size},
                        {"local_rank", local_rank},
                        {"host", host},
                        {"last_step", last_step},
                        {"last_write_time", last_write_time},
                        {"last_heartbeat", last_heartbeat},
                        {"heartbeat_interval", heartbeat_interval},
                        {"finished", finished}};
}

Result<RankState> RankState::FromJson(const nlohmann::json& j) {
  RankState state;
  try {
    state.rank = j.at("rank").get<uint32_t>();
    state.world_size = j.value("world_size", 0u);
    state.local_rank = j.value("local_rank", 0u);
    state.host = j.value("host", "");
    state.last_step = j.value("last_step", int64_t{-1});
    state.last_write_time = j.value("last_write_time", 0.0);
    state.last_heartbeat = j.value("last_heartbeat", 0.0);
    state.heartbeat_interval = j.value("heartbeat_interval", 0.0);
    state.finished = j.value("finished", false);
  } catch (const nlohmann::json::exception& e) {
    return Status::Corruption(std::string("rank record: ") + e.what());
  }
  return state;
}

void MergeConfig(nlohmann::json* target, const nlohmann::json& patch) {
  if (!patch.is_object() || !target->is_object()) {
    *target = patch;
    return;
  }
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    auto existing = target->find(it.key());
    if (existing != target->end() && existing->is_object() && it->is_object()) {
      MergeConfig(&*existing, *it);
    } else {
      (*target)[it.key()] = *it;
    }
  }
}

}  // namespace trainwatch::storage

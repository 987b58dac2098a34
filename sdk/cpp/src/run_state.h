// RunState: what the SDK's core knows about one run it writes. Shared by the user's Run handle and
// the core's run registry (records point at it), so it outlives whichever lets go first.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "name_table.h"

namespace trainwatch::sdk {

class RunState {
 public:
  RunState(std::string project, std::string id) : project(std::move(project)), id(std::move(id)) {}
  RunState(const RunState&) = delete;
  RunState& operator=(const RunState&) = delete;

  const std::string project;
  const std::string id;
  NameTable names;
  std::atomic<bool> finished{false};
  std::atomic<bool> handle_alive{true};  // the user's Run still exists: heartbeats continue
};

}  // namespace trainwatch::sdk

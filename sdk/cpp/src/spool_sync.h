// SyncSpool: uploads spool directories left by offline runs or by processes that exited while the
// server was away (`trainwatch sync DIR`). Batches keep their writer id and sequence, so syncing
// twice, or syncing what was partly delivered, applies every batch exactly once.
#pragma once

#include <functional>
#include <string>

#include "common/status.h"
#include "trainwatch/client.h"

namespace trainwatch::sdk {

struct SyncReport {
  int writers = 0;            // spool directories found
  int writers_complete = 0;   // fully delivered (and removed)
  uint64_t batches_acked = 0;
  uint64_t batches_duplicate = 0;  // already on the server
  uint64_t points_acked = 0;
};

// `dir` is one writer's directory (it holds *.seg files) or a spool root holding such directories.
// Waits up to `timeout_seconds` per writer. `progress` gets one line per writer.
Result<SyncReport> SyncSpool(const std::string& dir, const ClientOptions& options, double timeout_seconds,
                             const std::function<void(const std::string&)>& progress);

}  // namespace trainwatch::sdk

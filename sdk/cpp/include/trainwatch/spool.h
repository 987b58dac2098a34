// trainwatch::SyncSpool: uploads what the SDK spooled and could not deliver, from another process
// (`trainwatch sync DIR`): offline runs (Mode::kOffline) and runs whose process exited while the
// server was away.
//
//   trainwatch::ClientOptions options;
//   options.server = "https://metrics.example:8080";
//   trainwatch::SpoolSyncReport r = trainwatch::SyncSpool("/home/me/.cache/trainwatch/spool",
//   options, 300); if (!r.ok() || r.writers_complete != r.writers) ...;  // what is left stays for
//   the next sync
//
// Every batch keeps its writer id and sequence, so syncing twice, or syncing what was partly
// delivered, applies every batch exactly once. A writer's directory is removed once everything in
// it is acknowledged. The spool's format: docs/format/spool.md.
//
// Thread-safety: SyncSpool may run on any thread, but not twice at once over the same directory,
// nor while a Client still writes to it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "trainwatch/client.h"

namespace trainwatch {

struct SpoolSyncReport {
  int writers = 0;                 // writer directories found (each holds *.seg files)
  int writers_complete = 0;        // fully delivered, and removed
  uint64_t batches_acked = 0;      // batches the server took
  uint64_t batches_duplicate = 0;  // of those, batches it already had
  uint64_t points_acked = 0;
  // Empty unless the sync stopped early: `dir` could not be read, or a writer's spool could not be
  // opened ("<code>: <why>"). The counts say what was delivered before.
  std::string error;
  bool ok() const { return error.empty(); }
};

// `dir` is one writer's spool directory (it holds *.seg files) or a spool root holding such
// directories (ClientOptions::spool_dir's default root: ~/.cache/trainwatch/spool). Each writer is
// given up to `timeout_seconds` to be delivered; one that is not stays on disk, counted in
// `writers` but not `writers_complete`. `options` says where to (server, api_key, TLS files,
// transport) and receives the warnings (on_warning). `progress`, when set, gets one line per
// writer: its directory, what was delivered, and why it is incomplete if it is.
SpoolSyncReport SyncSpool(const std::string& dir, const ClientOptions& options,
                          double timeout_seconds,
                          const std::function<void(const std::string&)>& progress = nullptr);

}  // namespace trainwatch

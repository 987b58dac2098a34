// LivenessMonitor: declares runs whose writer went silent `crashed`.
//
// A run is watched while its status is `running` and it has recorded a heartbeat interval (only
// writers that send heartbeats do; runs written as plain JSON lines are never declared crashed).
// It is declared crashed once `missed_intervals` × its interval has passed since its last
// heartbeat, or since the monitor was created if that is later: a restarted server gives every
// run a fresh grace period. The declaration is an ordinary metadata write through the Ingestor
// (status `crashed`, end_time = the last heartbeat), so it is in the write-ahead log and durable.
// A later heartbeat sets the run running again (the engine does that when it applies it).
//
// A heartbeat applied between a sweep's look and its write is overtaken by the write; the run then
// stays crashed until the writer's next heartbeat, one interval later. In a cluster only the owner
// of a run's partition watches it (LivenessOptions::owns).
//
// Thread-safety: SweepOnce may run on any thread; Start and Stop are called from one.
#pragma once

#include <condition_variable>
#include <functional>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/logging.h"
#include "common/mutex.h"
#include "ingest/ingestor.h"
#include "storage/engine.h"

namespace trainwatch::server {

struct LivenessOptions {
  double missed_intervals = 3;  // silent this many intervals: crashed
  double sweep_interval_seconds = 1;
  // Cluster mode: whether this node owns the run's partition. Only the owner declares a run
  // crashed (through the stream, so every node applies the one declaration); a partition taken
  // over is watched by its new owner from then on. Empty: every run (a single node).
  std::function<bool(const std::string& project, const std::string& run)> owns;
};

class LivenessMonitor {
 public:
  // `engine`, `ingestor`, `clock` and `logger` must outlive the monitor. The grace period of every
  // run starts now, on `clock`.
  LivenessMonitor(const storage::Engine& engine, ingest::Ingestor& ingestor, Clock& clock,
                  Logger& logger, LivenessOptions options = {});
  ~LivenessMonitor();  // Stop()
  LivenessMonitor(const LivenessMonitor&) = delete;
  LivenessMonitor& operator=(const LivenessMonitor&) = delete;

  // Declares every overdue run crashed and waits until those writes are durable. Returns how many
  // runs it declared crashed; a refused write (full disk, shutdown) is logged and retried on the
  // next sweep.
  size_t SweepOnce();

  // Sweeps every sweep_interval_seconds (waiting on `clock`) on a thread of its own, until Stop().
  void Start();
  void Stop();

 private:
  void Loop();

  const storage::Engine& engine_;
  ingest::Ingestor& ingestor_;
  Clock& clock_;
  Logger& logger_;
  const LivenessOptions options_;
  const double started_at_;  // unix seconds on clock_

  Mutex mu_;
  std::condition_variable cv_;
  bool stop_ TW_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace trainwatch::server

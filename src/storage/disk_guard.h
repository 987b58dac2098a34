// Retention: deletes what the operator said may go, and keeps the disk from filling up.
//
//  - Maximum age per project: sealed chunks whose newest point is older than the project's limit
//    are deleted, and so are histograms, images (with the blobs no other image refers to) and
//    texts older than it.
//  - Disk guard: while the data volume is above `disk_threshold_percent` used, the runs that are
//    over (finished, crashed or stalled) and whose last activity is more than
//    `disk_guard_min_age_seconds` old are deleted, oldest first, each one logged. A run's last
//    activity is the latest of its end time, its newest point's time and its newest heartbeat (the
//    server's clock): a client setting an old end time on a run still being written does not make
//    it eligible. If that is not enough and nothing more may be deleted, every write is refused
//    with a clear ResourceExhausted error (through `set_refusal`) instead of letting a full disk
//    corrupt anything; writes resume by themselves once there is room again.
//
// RunOnce is called periodically by the server from one thread, every NextPollSeconds(): shorter
// while the disk is near the threshold, so that the guard acts between the regular polls before a
// write fails. Not thread-safe.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "common/clock.h"
#include "common/logging.h"
#include "common/status.h"
#include "storage/engine.h"

namespace trainwatch::storage {

struct RetentionOptions {
  std::map<std::string, double> max_age_seconds;  // project -> maximum age; absent = keep forever
  double disk_threshold_percent = 95;
  double disk_guard_min_age_seconds = 7 * 86400;
  // Within this many percentage points below the threshold (or above it), the next pass comes
  // after `near_threshold_poll_seconds` instead of the regular interval.
  double near_threshold_margin_percent = 5;
  double near_threshold_poll_seconds = 5;
};

// The time a run last showed activity as the server knows it: the latest of its end time, its
// newest point's time and its newest heartbeat (0 if none).
double LastActivity(const RunInfo& run);

// Percent (0-100) of the volume holding `path` that is in use (statvfs).
Result<double> DiskUsedPercent(const std::string& path);

class Retention {
 public:
  using DiskUsage = std::function<Result<double>()>;
  using SetRefusal = std::function<void(Status)>;

  // `engine`, `clock` and `logger` must outlive this object.
  Retention(Engine& engine, Clock& clock, Logger& logger, RetentionOptions options, DiskUsage usage,
            SetRefusal set_refusal);

  // One pass: age limits, then the disk guard. Returns the first error met (the pass goes on).
  Status RunOnce();
  bool refusing() const { return refusing_; }
  // How long to wait before the next RunOnce: `regular_seconds`, or the shorter near-threshold
  // poll while the last pass found the disk within the margin of the threshold, above it, or could
  // not measure it.
  double NextPollSeconds(double regular_seconds) const;

 private:
  Status ApplyMaxAges();
  Status GuardDisk();

  Engine& engine_;
  Clock& clock_;
  Logger& logger_;
  const RetentionOptions options_;
  DiskUsage usage_;
  SetRefusal set_refusal_;
  bool refusing_ = false;
  double last_used_percent_ = -1;  // what the last pass measured; -1: unknown
};

}  // namespace trainwatch::storage

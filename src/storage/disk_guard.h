// Retention: deletes what the operator said may go, and keeps the disk from filling up.
//
//  - Maximum age per project: sealed chunks whose newest point is older than the project's limit
//    are deleted, and so are histograms, images (with the blobs no other image refers to) and
//    texts older than it.
//  - Disk guard: while the data volume is above `disk_threshold_percent` used, the oldest finished
//    runs that ended more than `disk_guard_min_age_seconds` ago are deleted, oldest first, each one
//    logged. If that is not enough and nothing more may be deleted, every write is refused with a
//    clear ResourceExhausted error (through `set_refusal`) instead of letting a full disk corrupt
//    anything; writes resume by themselves once there is room again.
//
// RunOnce is called periodically by the server from one thread. Not thread-safe.
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
};

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
};

}  // namespace trainwatch::storage

// DiskGuard: keeps the disk from filling up. While the data volume is above `threshold_percent`
// used, the runs that are over (finished, crashed or stalled) and whose last activity is more than
// `min_age_seconds` old are deleted, oldest first, each one logged. A run's last activity is the
// latest of its end time, its newest point's time and its newest heartbeat (the server's clock): a
// client setting an old end time on a run still being written does not make it eligible. If that
// is not enough and nothing more may be deleted, every write is refused with a clear
// ResourceExhausted error (through `set_refusal`) instead of letting a full disk corrupt anything;
// writes resume by themselves once there is room again.
//
// Retention (retention.h) runs it after the age limits. Not thread-safe.
#pragma once

#include <functional>
#include <string>

#include "common/clock.h"
#include "common/logging.h"
#include "common/status.h"
#include "storage/engine.h"

namespace trainwatch::storage {

struct DiskGuardOptions {
  double threshold_percent = 95;
  double min_age_seconds = 7 * 86400;
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

class DiskGuard {
 public:
  using DiskUsage = std::function<Result<double>()>;
  using SetRefusal = std::function<void(Status)>;

  // `engine`, `clock` and `logger` must outlive this object.
  DiskGuard(Engine& engine, Clock& clock, Logger& logger, DiskGuardOptions options, DiskUsage usage,
            SetRefusal set_refusal);

  // One pass: measures the disk, deletes eligible runs while it is above the threshold, and
  // refuses or resumes writes. Returns the first error met.
  Status RunOnce();
  bool refusing() const { return refusing_; }
  // How long to wait before the next pass: `regular_seconds`, or the shorter near-threshold poll
  // while the last pass found the disk within the margin of the threshold, above it, or could not
  // measure it.
  double NextPollSeconds(double regular_seconds) const;

 private:
  // The runs the guard may delete now, the longest silent first.
  std::vector<RunInfo> Candidates() const;
  // Refuses writes while `used` is above the threshold, accepts them again below it.
  void UpdateRefusal(double used);

  Engine& engine_;
  Clock& clock_;
  Logger& logger_;
  const DiskGuardOptions options_;
  DiskUsage usage_;
  SetRefusal set_refusal_;
  bool refusing_ = false;
  double last_used_percent_ = -1;  // what the last pass measured; -1: unknown
};

}  // namespace trainwatch::storage

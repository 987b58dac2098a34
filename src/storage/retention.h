// Retention: deletes what the operator said may go, and keeps the disk from filling up.
//
//  - Maximum age per project: sealed chunks whose newest point is older than the project's limit
//    are deleted, and so are the per-step entries (histograms, images with the blobs no other
//    image refers to, texts) older than it.
//  - Then the disk guard (disk_guard.h): old runs go while the disk is too full, and writes are
//    refused while nothing more may go.
//
// RunOnce is called periodically by the server from one thread, every NextPollSeconds(): shorter
// while the disk is near the threshold, so that the guard acts between the regular polls before a
// write fails. Not thread-safe.
#pragma once

#include <map>
#include <string>

#include "common/clock.h"
#include "common/logging.h"
#include "common/status.h"
#include "storage/disk_guard.h"
#include "storage/engine.h"

namespace trainwatch::storage {

struct RetentionOptions {
  std::map<std::string, double> max_age_seconds;  // project -> maximum age; absent = keep forever
  // The disk guard's settings (DiskGuardOptions).
  double disk_threshold_percent = 95;
  double disk_guard_min_age_seconds = 7 * 86400;
  double near_threshold_margin_percent = 5;
  double near_threshold_poll_seconds = 5;
};

class Retention {
 public:
  using DiskUsage = DiskGuard::DiskUsage;
  using SetRefusal = DiskGuard::SetRefusal;

  // `engine`, `clock` and `logger` must outlive this object.
  Retention(Engine& engine, Clock& clock, Logger& logger, RetentionOptions options, DiskUsage usage,
            SetRefusal set_refusal);

  // One pass: age limits, then the disk guard. Returns the first error met (the pass goes on).
  Status RunOnce();
  bool refusing() const { return guard_.refusing(); }
  // When the next RunOnce is due (DiskGuard::NextPollSeconds).
  double NextPollSeconds(double regular_seconds) const {
    return guard_.NextPollSeconds(regular_seconds);
  }

 private:
  Status ApplyMaxAges();

  Engine& engine_;
  Clock& clock_;
  Logger& logger_;
  const std::map<std::string, double> max_age_seconds_;
  DiskGuard guard_;
};

}  // namespace trainwatch::storage

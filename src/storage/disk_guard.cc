#include "storage/disk_guard.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>

namespace trainwatch::storage {

Result<double> DiskUsedPercent(const std::string& path) {
  struct statvfs st {};
  if (::statvfs(path.c_str(), &st) != 0) return Status::IoErrorFromErrno("statvfs " + path, errno);
  double total = static_cast<double>(st.f_blocks) * st.f_frsize;
  double available = static_cast<double>(st.f_bavail) * st.f_frsize;
  if (total <= 0) return 0.0;
  return 100.0 * (total - available) / total;
}

double LastActivity(const RunInfo& run) {
  return std::max({run.end_time, run.last_write_time, run.last_heartbeat});
}

DiskGuard::DiskGuard(Engine& engine, Clock& clock, Logger& logger, DiskGuardOptions options,
                     DiskUsage usage, SetRefusal set_refusal)
    : engine_(engine),
      clock_(clock),
      logger_(logger),
      options_(options),
      usage_(std::move(usage)),
      set_refusal_(std::move(set_refusal)) {}

double DiskGuard::NextPollSeconds(double regular_seconds) const {
  const bool near =
      last_used_percent_ < 0 || refusing_ ||
      last_used_percent_ >= options_.threshold_percent - options_.near_threshold_margin_percent;
  return near ? std::min(regular_seconds, options_.near_threshold_poll_seconds) : regular_seconds;
}

std::vector<RunInfo> DiskGuard::Candidates() const {
  // Runs that are over (a running run may still write) with no activity for long enough.
  const double cutoff = clock_.NowUnixSeconds() - options_.min_age_seconds;
  std::vector<RunInfo> candidates;
  for (RunInfo& run : engine_.ListRuns()) {
    const bool over = run.status == RunStatus::kFinished || run.status == RunStatus::kCrashed ||
                      run.status == RunStatus::kStalled;
    if (over && LastActivity(run) < cutoff) candidates.push_back(std::move(run));
  }
  std::sort(candidates.begin(), candidates.end(),
            [](const RunInfo& a, const RunInfo& b) { return LastActivity(a) < LastActivity(b); });
  return candidates;
}

Status DiskGuard::RunOnce() {
  last_used_percent_ = -1;
  TW_ASSIGN_OR_RETURN(double used, usage_());
  last_used_percent_ = used;
  if (used <= options_.threshold_percent) {
    if (refusing_)
      logger_.Info("disk guard: space available again; accepting writes", {{"used_percent", used}});
    UpdateRefusal(used);
    return Status::Ok();
  }
  const std::vector<RunInfo> candidates = Candidates();
  size_t deleted = 0;
  for (const RunInfo& run : candidates) {
    logger_.Warn("disk guard: deleting an old run",
                 {{"project", run.project},
                  {"run", run.id},
                  {"status", std::string(RunStatusName(run.status))},
                  {"last_activity", LastActivity(run)},
                  {"used_percent", used}});
    TW_RETURN_IF_ERROR(engine_.DeleteRun(run.project, run.id));
    ++deleted;
    if (deleted % 16 == 0 || &run == &candidates.back()) {
      TW_RETURN_IF_ERROR(engine_.CompactStore());  // deletions free space only once compacted
      TW_ASSIGN_OR_RETURN(used, usage_());
      last_used_percent_ = used;
      if (used <= options_.threshold_percent) break;
    }
  }
  UpdateRefusal(used);
  return Status::Ok();
}

void DiskGuard::UpdateRefusal(double used) {
  if (used > options_.threshold_percent && !refusing_) {
    std::string why = "disk is " + std::to_string(static_cast<int>(used)) + "% full (limit " +
                      std::to_string(static_cast<int>(options_.threshold_percent)) +
                      "%) and no finished, crashed or stalled run silent for longer than the "
                      "guard's minimum age is left to delete; writes are refused until space is "
                      "freed";
    logger_.Error("disk guard: refusing writes", {{"used_percent", used}});
    set_refusal_(Status::ResourceExhausted(why));
    refusing_ = true;
  } else if (used <= options_.threshold_percent && refusing_) {
    set_refusal_(Status::Ok());
    refusing_ = false;
  }
}

}  // namespace trainwatch::storage

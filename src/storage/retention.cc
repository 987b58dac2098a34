#include "storage/retention.h"

namespace trainwatch::storage {
namespace {

DiskGuardOptions GuardOptionsOf(const RetentionOptions& options) {
  DiskGuardOptions guard;
  guard.threshold_percent = options.disk_threshold_percent;
  guard.min_age_seconds = options.disk_guard_min_age_seconds;
  guard.near_threshold_margin_percent = options.near_threshold_margin_percent;
  guard.near_threshold_poll_seconds = options.near_threshold_poll_seconds;
  return guard;
}

}  // namespace

Retention::Retention(Engine& engine, Clock& clock, Logger& logger, RetentionOptions options,
                     DiskUsage usage, SetRefusal set_refusal)
    : engine_(engine),
      clock_(clock),
      logger_(logger),
      max_age_seconds_(std::move(options.max_age_seconds)),
      guard_(engine, clock, logger, GuardOptionsOf(options), std::move(usage),
             std::move(set_refusal)) {}

Status Retention::RunOnce() {
  Status ages = ApplyMaxAges();
  Status guard = guard_.RunOnce();
  return ages.ok() ? guard : ages;
}

Status Retention::ApplyMaxAges() {
  const double now = clock_.NowUnixSeconds();
  for (const auto& [project, max_age] : max_age_seconds_) {
    Result<uint64_t> deleted = engine_.DeleteChunksOlderThan(project, now - max_age);
    if (!deleted.ok()) return deleted.status().WithContext("retention of project " + project);
    if (*deleted > 0) {
      logger_.Info("retention deleted old points",
                   {{"project", project}, {"points", *deleted}, {"max_age_seconds", max_age}});
    }
    Result<uint64_t> histograms = engine_.DeleteHistogramsOlderThan(project, now - max_age);
    if (!histograms.ok()) return histograms.status().WithContext("retention of project " + project);
    Result<uint64_t> images = engine_.DeleteImagesOlderThan(project, now - max_age);
    if (!images.ok()) return images.status().WithContext("retention of project " + project);
    Result<uint64_t> texts = engine_.DeleteTextsOlderThan(project, now - max_age);
    if (!texts.ok()) return texts.status().WithContext("retention of project " + project);
    if (*histograms > 0 || *images > 0 || *texts > 0) {
      logger_.Info("retention deleted old histograms, images and texts",
                   {{"project", project},
                    {"histograms", *histograms},
                    {"images", *images},
                    {"texts", *texts},
                    {"max_age_seconds", max_age}});
    }
  }
  return Status::Ok();
}

}  // namespace trainwatch::storage

#include "detect/plateau_detector.h"

#include <algorithm>
#include <cmath>

namespace trainwatch::detect {

void PlateauDetector::Observe(int64_t step, std::optional<double> ur, std::optional<double> lr,
                              const LrContext& lrc, int64_t steps, int64_t warm, const Cadence& cadence,
                              AlertSink& sink) {
  // Persistence in steps at the run's cadence: 10 records of per-step logging, 2 at 100-step.
  const int64_t persist = cadence.RecordsFor(options_.plateau_persist, kMinPersistRecords);
  const double lr_floor = lrc.lr_max() / options_.lr_drop_ratio;
  if (!ur) {
    // Without an update ratio: the lr itself dropped >= 100x in one record and stays there.
    // (param_norm differences are not usable: logged with ~6 digits they are exactly 0 in healthy
    // low-lr phases.)
    if (!lr || !std::isfinite(*lr)) return;
    holding_ = *lr <= lr_floor;
    if (lrc.lr_dropped() && *lr <= lr_floor) {
      if (++count_ >= persist) {
        sink.Emit(AlertKind::kPlateau, options_.bindings.lr.empty() ? "" : options_.bindings.lr.front(), step, *lr,
                  Format("lr dropped >= %gx in one record and stayed there for %lld records", options_.lr_drop_ratio,
                         static_cast<long long>(count_)));
      }
    } else {
      count_ = 0;
    }
    return;
  }
  if (!std::isfinite(*ur)) return;
  double lu = std::log(std::max(*ur, 1e-30));
  if (ur_.count() >= warm) {
    bool collapsed = lu - ur_.mean() < -std::log(options_.plateau_ratio);
    holding_ = lu - ur_.mean() < -std::log(options_.plateau_ratio) / 2;
    // A collapse is a fault when the lr did not decay into it: lr unchanged (stale optimizer) or
    // dropped >= 100x in one record (schedule bug).
    bool sudden = !lr || lrc.lr_dropped() || *lr > lr_floor;
    if (collapsed && sudden && *ur >= 0) {
      if (++count_ >= persist) {
        double ratio = std::exp(lu - ur_.mean());
        sink.Emit(AlertKind::kPlateau, "update_ratio", step, ratio,
                  Format("update ratio %.2g of its baseline for %lld records", ratio, static_cast<long long>(count_)));
      }
      return;
    }
    count_ = 0;
  }
  if (*ur > 0) ur_.Update(lu, steps);
}

}  // namespace trainwatch::detect

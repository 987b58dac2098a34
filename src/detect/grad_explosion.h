// GradExplosionDetector: the total grad norm against its log-space baselines (design section 2,
// grad_explosion): a record far above the median of the last logged norms (rule S, from the
// second logged value on; the kind of one-record excursion a 100- or 500-step log shows), norms
// persistently above the slow baseline (rule B), or right after an lr shock (rule A). Every
// threshold is a ratio, so the absolute scale (1e-2 or 1e9) does not matter. State: one Ewma, one
// RobustWindow and the last expl_win hit bits.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>

#include "detect/ewma.h"
#include "detect/inhibitor.h"
#include "detect/lr_context.h"
#include "detect/options.h"
#include "detect/robust_window.h"

namespace trainwatch::detect {

class GradExplosionDetector {
 public:
  explicit GradExplosionDetector(const DetectorOptions& options)
      : options_(options), gn_(options.a_slow, options.a_record_max), window_(options.window) {}

  // One training record's total grad norm g (ignored unless finite and > 0); `steps` since the
  // previous training record; `warm`: the values rule B's baseline needs at the run's cadence.
  void Observe(int64_t step, double g, int64_t steps, int64_t warm,
               const std::optional<Shock>& shock, AlertSink& sink);
  // A new, sparser cadence: the window's per-step values are not this record's neighbours.
  void ForgetWindow() { window_.Clear(); }
  double baseline() const { return gn_.mean(); }
  // After an alert: whether the last observed norm was still above the square root of expl_ratio
  // times the level the alert compared against (half the threshold on the log scale).
  bool Holding() const { return incident_ref_ && last_lg_ - *incident_ref_ > std::log(options_.expl_ratio) / 2; }

 private:
  const DetectorOptions& options_;
  Ewma gn_;
  RobustWindow window_;
  uint32_t hits_ = 0;     // bit i: record i back was a hit
  double last_lg_ = 0;                  // ln g of the last observation
  std::optional<double> incident_ref_;  // ln of the level the last alert compared against
};

}  // namespace trainwatch::detect

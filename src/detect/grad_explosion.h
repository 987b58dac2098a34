// GradExplosionDetector: the total grad norm against its log-space baseline (design section 2,
// grad_explosion). State: one Ewma and the last expl_win hit bits.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>

#include "detect/ewma.h"
#include "detect/inhibitor.h"
#include "detect/lr_context.h"
#include "detect/options.h"

namespace trainwatch::detect {

class GradExplosionDetector {
 public:
  explicit GradExplosionDetector(const DetectorOptions& options) : options_(options), gn_(options.a_slow) {}

  // One training record's total grad norm g (ignored unless finite and > 0); `steps` since the
  // previous training record.
  void Observe(int64_t step, double g, int64_t steps, const std::optional<Shock>& shock, AlertSink& sink);
  double baseline() const { return gn_.mean(); }
  // After an alert: whether the last observed norm was still above the square root of expl_ratio
  // times the level the alert compared against (half the threshold on the log scale).
  bool Holding() const { return incident_ref_ && last_lg_ - *incident_ref_ > std::log(options_.expl_ratio) / 2; }

 private:
  const DetectorOptions& options_;
  Ewma gn_;
  uint32_t hits_ = 0;     // bit i: record i back was a hit
  int64_t hit_records_ = 0;
  double last_lg_ = 0;                  // ln g of the last observation
  std::optional<double> incident_ref_;  // ln of the level the last alert compared against
};

}  // namespace trainwatch::detect

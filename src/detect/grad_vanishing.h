// GradVanishingDetector: per-layer grad norms, each against its own log-space baseline; alerts on
// the lower median over layers (design section 2, grad_vanishing). State: one Ewma per layer
// series (bounded by the server's series cap) and a counter.
#pragma once

#include <cstdint>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "detect/cadence.h"
#include "detect/ewma.h"
#include "detect/inhibitor.h"
#include "detect/metric_bindings.h"
#include "detect/options.h"

namespace trainwatch::detect {

class GradVanishingDetector {
 public:
  explicit GradVanishingDetector(const DetectorOptions& options) : options_(options) {}

  // One training record (all finite): `layers` are the indexes of its per-layer grad norms in
  // `metrics`, resolved by a RecordLayout whose version is `layout_version`. `warm`: the values a
  // layer's baseline needs at the run's cadence; the persistence is converted through `cadence`.
  void Observe(int64_t step, MetricSpan metrics, const std::vector<int>& layers, uint64_t layout_version,
               int64_t steps, int64_t warm, const Cadence& cadence, AlertSink& sink);
  // Whether the last median layer deviation was still below half the threshold (log scale).
  bool Holding() const { return last_median_ < -std::log(options_.vanish_ratio) / 2; }

 private:
  const DetectorOptions& options_;
  std::map<std::string, Ewma, std::less<>> layers_;  // never erased: slots_ points into it
  std::vector<Ewma*> slots_;                          // per entry of the layout's layers()
  uint64_t slots_version_ = UINT64_MAX;
  std::vector<double> devs_;  // scratch
  int64_t count_ = 0;
  double last_median_ = 0;
};

}  // namespace trainwatch::detect

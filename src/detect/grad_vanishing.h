// GradVanishingDetector: per-layer grad norms, each against its own log-space baseline; alerts on
// the lower median over layers (design section 2, grad_vanishing). State: one Ewma per layer
// series (bounded by the server's series cap) and a counter.
#pragma once

#include <cstdint>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "detect/ewma.h"
#include "detect/inhibitor.h"
#include "detect/metric_bindings.h"
#include "detect/options.h"

namespace trainwatch::detect {

class GradVanishingDetector {
 public:
  explicit GradVanishingDetector(const DetectorOptions& options) : options_(options) {}

  // The training metrics of one record (all finite); layer norms are picked by the bound prefix.
  void Observe(int64_t step, MetricSpan train, int64_t steps, AlertSink& sink);
  // Whether the last median layer deviation was still below half the threshold (log scale).
  bool Holding() const { return last_median_ < -std::log(options_.vanish_ratio) / 2; }

 private:
  const DetectorOptions& options_;
  std::map<std::string, Ewma, std::less<>> layers_;
  std::vector<double> devs_;  // scratch
  int64_t count_ = 0;
  double last_median_ = 0;
};

}  // namespace trainwatch::detect

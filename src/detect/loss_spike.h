// LossSpikeDetector: a transient jump of the train loss far above its robust baseline, confirmed
// by its recovery (design section 2, loss_spike). State: one Ewma and an open candidate.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "detect/ewma.h"
#include "detect/inhibitor.h"
#include "detect/options.h"

namespace trainwatch::detect {

class LossSpikeDetector {
 public:
  explicit LossSpikeDetector(const DetectorOptions& options) : options_(options), lo_(options.a_slow) {}

  // Whether the baseline has `warm` values (the loss detectors' common warm-up).
  bool ready() const { return lo_.count() >= options_.warm; }
  // One finite log loss `ll`. `armed` is false inside a restart window or while a shock is open.
  void Observe(int64_t step, double ll, int64_t steps, bool armed, std::string_view metric, AlertSink& sink);
  // A resume drops the open candidate.
  void DropCandidate() { candidate_.reset(); }
  // Whether the last loss was still above half the spike threshold (log scale).
  bool Holding() const { return holding_; }

 private:
  struct Candidate {
    int64_t start;
    double peak;
  };
  const DetectorOptions& options_;
  Ewma lo_;
  std::optional<Candidate> candidate_;
  bool holding_ = false;
};

}  // namespace trainwatch::detect

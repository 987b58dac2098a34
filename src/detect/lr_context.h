// LrContext: the per-run learning-rate context that makes the detectors robust to LR schedules
// (design section 1): lr_prev, lr_max, lr_dropped and the open LR excursion ("shock").
#pragma once

#include <cstdint>
#include <optional>

#include "detect/options.h"

namespace trainwatch::detect {

// An LR excursion: lr rose above shock_ratio x every earlier lr. Baselines captured at opening.
struct Shock {
  int64_t step = 0;
  double gn0 = 0;     // grad-norm baseline (ln)
  double lo0 = 0;     // slow loss level (ln)
  double dif0 = 0;    // loss variability baseline
  bool ready = false; // the loss baseline was warm
};

// What the caller's other detectors hold at the moment a shock opens.
struct ShockBaselines {
  double gn0, lo0, dif0;
  bool ready;
};

class LrContext {
 public:
  explicit LrContext(const DetectorOptions& options) : options_(options) {}

  enum class Event { kNone, kShockOpened, kWarmRestart };
  // One finite lr of a training record; `records` counts all records so far, this one included.
  Event Observe(int64_t step, double lr, int64_t records, const ShockBaselines& baselines);

  double lr_max() const { return lr_max_; }
  bool lr_dropped() const { return lr_dropped_; }
  // The open shock, if any; detectors downstream classify or close it.
  std::optional<Shock>& shock() { return shock_; }

 private:
  const DetectorOptions& options_;
  double lr_max_ = 0;
  std::optional<double> lr_prev_;
  bool lr_dropped_ = false;
  std::optional<Shock> shock_;
};

}  // namespace trainwatch::detect

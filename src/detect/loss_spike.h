// LossSpikeDetector: a logged training loss far above the median of the recent logged losses
// (design section 2, loss_spike). It judges every record against the rolling robust window of the
// last `window` log losses, whatever the cadence: at 500-step logging the excursion may be one
// record long, so the alert fires on the first record above the threshold (with its evidence),
// and the excursion stays one incident until the loss comes back. State: one RobustWindow and the
// open excursion.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "detect/inhibitor.h"
#include "detect/options.h"
#include "detect/robust_window.h"

namespace trainwatch::detect {

class LossSpikeDetector {
 public:
  explicit LossSpikeDetector(const DetectorOptions& options) : options_(options), window_(options.window) {}

  // Whether the window holds enough values to judge (the loss detectors' common warm-up).
  bool ready() const { return window_.size() >= static_cast<size_t>(options_.spike_min_records); }
  // One finite log loss `ll` of a training record. `armed` is false inside a restart window or
  // while an lr shock is open: the excursion is then learned as normal. `dense`: the run logs
  // (nearly) every step, so a spike is confirmed by the loss coming back on the next records
  // (a jump that stays is a level shift: a consequence such as a weight collapse, not a spike);
  // at sparse cadences the first record above the threshold is the evidence there is.
  void Observe(int64_t step, double ll, bool armed, bool dense, std::string_view metric, AlertSink& sink);
  // A resume, or a new cadence: the recent values describe another regime.
  void Reset() {
    window_.Clear();
    excursion_.reset();
  }
  // Whether the last loss was still above half the spike threshold (log scale) of the open or
  // last excursion.
  bool Holding() const { return holding_; }
  // Whether the loss is in an excursion: above the level it jumped from, not yet back under half
  // the threshold, for less than a window of records (then it is the new level). A rise that
  // began as a jump is a spike until it has lasted that long, never a divergence.
  bool InExcursion() const { return excursion_.has_value(); }
  // Consecutive records the open excursion has held (0 when none is open), and the level it left (ln).
  int64_t excursion_records() const { return excursion_ ? excursion_->records : 0; }
  double excursion_base() const { return excursion_ ? excursion_->base : 0; }
  // Whether the last record ended an excursion that had become the new level (once).
  bool TakeNewLevel() { return std::exchange(new_level_, false); }

 private:
  // Records a dense-cadence excursion may take to start coming back.
  static constexpr int64_t kConfirmRecords = 4;
  struct Excursion {
    int64_t start;
    int64_t records;
    double base;  // the window's median when it began (ln)
    double thr;   // its threshold (ln ratio)
    double peak;  // highest ln loss so far
    bool pending; // armed and not yet reported
    size_t window_size;
  };
  void Report(int64_t step, const Excursion& e, std::string_view metric, AlertSink& sink);
  double Noise(bool dense) const;
  const DetectorOptions& options_;
  RobustWindow window_;
  std::optional<Excursion> excursion_;
  bool holding_ = false;
  bool new_level_ = false;
};

}  // namespace trainwatch::detect

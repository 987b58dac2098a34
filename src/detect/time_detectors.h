// TimeDetectors: `stalled` and `throughput_drop`, from each record's own timestamp (design
// section 2). State: the previous distinct step and its time, dt_max, a ring of tp_win log step
// durations and one Ewma.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "detect/cadence.h"
#include "detect/ewma.h"
#include "detect/inhibitor.h"
#include "detect/options.h"

namespace trainwatch::detect {

class TimeDetectors {
 public:
  explicit TimeDetectors(const DetectorOptions& options);

  // One record. A non-finite `time` means the record has none and is ignored; a second record of
  // the same step is not a step completion.
  // `cadence`: the run's training cadence; the median window, the persistence and the warm-up
  // are steps' worth of records at it.
  void Observe(int64_t step, double time, const Cadence& cadence, AlertSink& sink);
  // `stalled` when now - (time of the last step) >= thr; reported once per gap, re-armed by the
  // next step.
  void CheckStalled(double now, AlertSink& sink);
  // After a resume: no time delta across the restart.
  void ForgetLastTime() { has_prev_ = false; }
  // Whether a stall was reported and no step has arrived since.
  bool Stalled() const { return stall_reported_; }
  // After a throughput_drop alert: whether the median step duration is still above the square
  // root of tp_ratio times the speed before the drop (half the threshold, log scale).
  bool ThroughputHolding() const { return last_median_ - drop_ref_ > std::log(options_.tp_ratio) / 2; }

 private:
  static constexpr int64_t kMinWindow = 5;  // step durations in the median, at any cadence
  double StallThreshold() const;
  void ReportStall(double gap, AlertSink& sink);
  void Throughput(int64_t step, double step_duration, const Cadence& cadence, AlertSink& sink);
  double RingMedian();
  // Whether a gap of dt seconds over `steps` steps is what that many steps take at the run's
  // median step duration (times stall_mult).
  bool ExplainedBySteps(double dt, int64_t steps);

  const DetectorOptions& options_;
  bool has_prev_ = false;
  int64_t prev_step_ = 0;
  double prev_time_ = 0;
  bool stall_reported_ = false;
  double dt_max_ = 0;
  std::vector<double> ring_;  // at most tp_win values of ln(step duration)
  size_t ring_next_ = 0;
  std::vector<double> scratch_;
  int64_t durations_ = 0;
  int64_t over_count_ = 0;
  double last_median_ = 0;  // ln of the last median step duration
  double drop_ref_ = 0;     // ln baseline duration before the last drop
  Ewma base_;
};

}  // namespace trainwatch::detect

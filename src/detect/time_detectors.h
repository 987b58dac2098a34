// TimeDetectors: `stalled` and `throughput_drop`, from each record's own timestamp (design
// section 2). State: the previous distinct step and its time, dt_max, a ring of tp_win log step
// durations and one Ewma.
#pragma once

#include <cstdint>
#include <vector>

#include "detect/ewma.h"
#include "detect/inhibitor.h"
#include "detect/options.h"

namespace trainwatch::detect {

class TimeDetectors {
 public:
  explicit TimeDetectors(const DetectorOptions& options);

  // One record. A non-finite `time` means the record has none and is ignored; a second record of
  // the same step is not a step completion.
  void Observe(int64_t step, double time, AlertSink& sink);
  // `stalled` when now - (time of the last step) >= thr; reported once per gap, re-armed by the
  // next step.
  void CheckStalled(double now, AlertSink& sink);
  // After a resume: no time delta across the restart.
  void ForgetLastTime() { has_prev_ = false; }

 private:
  double StallThreshold() const;
  void ReportStall(double gap, AlertSink& sink);
  void Throughput(int64_t step, double step_duration, AlertSink& sink);
  double RingMedian();

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
  Ewma base_;
};

}  // namespace trainwatch::detect

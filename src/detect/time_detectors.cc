#include "detect/time_detectors.h"

#include <algorithm>
#include <cmath>

namespace trainwatch::detect {

TimeDetectors::TimeDetectors(const DetectorOptions& options)
    : options_(options), base_(options.a_tp_base, options.a_record_max) {}

double TimeDetectors::StallThreshold() const {
  return std::max(options_.stall_floor, options_.stall_mult * dt_max_);
}

void TimeDetectors::ReportStall(double gap, AlertSink& sink) {
  if (stall_reported_) return;
  stall_reported_ = true;
  AlertSink at_prev{sink.inhibitor, sink.run, prev_time_, sink.out};
  at_prev.Emit(AlertKind::kStalled, "", prev_step_, gap,
               Format("no new step for %.1f s after step %lld (threshold %.1f s)", gap,
                      static_cast<long long>(prev_step_), StallThreshold()));
}

void TimeDetectors::CheckStalled(double now, AlertSink& sink) {
  if (!has_prev_ || !std::isfinite(now)) return;
  double gap = now - prev_time_;
  if (gap >= StallThreshold()) ReportStall(gap, sink);
}

void TimeDetectors::Observe(int64_t step, double time, const Cadence& cadence, AlertSink& sink) {
  if (!std::isfinite(time)) return;
  if (has_prev_ && step == prev_step_) return;
  if (has_prev_) {
    double dt = time - prev_time_;
    const int64_t steps = std::max<int64_t>(1, step - prev_step_);
    if (dt >= StallThreshold() && !ExplainedBySteps(dt, steps)) {
      ReportStall(dt, sink);
    } else {
      dt_max_ = std::max(dt_max_, dt);
      Throughput(step, dt / static_cast<double>(steps), cadence, sink);
    }
  }
  has_prev_ = true;
  prev_step_ = step;
  prev_time_ = time;
  stall_reported_ = false;
}

bool TimeDetectors::ExplainedBySteps(double dt, int64_t steps) {
  // A gap that covers many steps (the first record after a per-step prefix, an eval every 1,000
  // steps) is as long as its steps take: a stall is a gap far longer than its steps explain.
  if (ring_.empty() || steps == 1) return false;
  return dt < options_.stall_mult * static_cast<double>(steps) * std::exp(RingMedian());
}

double TimeDetectors::RingMedian() {
  scratch_.assign(ring_.begin(), ring_.end());
  auto mid = scratch_.begin() + static_cast<std::ptrdiff_t>(scratch_.size() / 2);
  std::nth_element(scratch_.begin(), mid, scratch_.end());
  return *mid;
}

void TimeDetectors::Throughput(int64_t step, double step_duration, const Cadence& cadence, AlertSink& sink) {
  if (step_duration <= 0) return;
  // A record of a sparse log is already the mean of many step durations: fewer make a median.
  const size_t window = static_cast<size_t>(cadence.RecordsFor(std::max<int64_t>(1, options_.tp_win), kMinWindow));
  // The median already needs most of the window slow: at sparse cadences that is persistence enough.
  const int64_t persist = cadence.RecordsFor(options_.tp_persist, 1);
  if (ring_.size() > window) {
    ring_.clear();  // the cadence changed: start the window over
    ring_next_ = 0;
  }
  if (ring_.size() < window) {
    ring_.push_back(std::log(step_duration));
  } else {
    ring_[ring_next_] = std::log(step_duration);
    ring_next_ = (ring_next_ + 1) % window;
  }
  ++durations_;
  if (ring_.size() < window) return;
  double med = RingMedian();
  last_median_ = med;
  if (durations_ > cadence.RecordsFor(options_.warm, options_.warm_records) &&
      med - base_.mean() > options_.sensitivity * std::log(options_.tp_ratio)) {
    if (++over_count_ >= persist) {
      double ratio = std::exp(med - base_.mean());
      if (sink.Emit(AlertKind::kThroughputDrop, "", step, ratio,
                    Format("median step duration %.2fx its baseline for %lld records", ratio,
                           static_cast<long long>(over_count_)))) {
        drop_ref_ = base_.mean();
      }
      base_.set_mean(med);  // the slow speed is the new normal: one alert per drop
      over_count_ = 0;
    }
    return;
  }
  over_count_ = 0;
  base_.Update(med);
}

}  // namespace trainwatch::detect

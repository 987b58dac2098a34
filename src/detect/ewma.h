// Ewma: the step-aware exponentially weighted mean and mean absolute deviation every baseline uses
// (design section 1). Three scalars; plain averaging while n is small (warm start).
#pragma once

#include <cstdint>

namespace trainwatch::detect {

class Ewma {
 public:
  explicit Ewma(double a) : a_(a) {}

  // Learns x; `steps` (>= 1) is the number of steps since the previous update, so the time
  // constant stays in steps when a run logs only every N steps.
  void Update(double x, int64_t steps = 1);

  int64_t count() const { return n_; }
  double mean() const { return m_; }
  double mad() const { return d_; }  // mean absolute deviation about the mean
  // Re-baselines the mean (throughput_drop after an alert).
  void set_mean(double m) { m_ = m; }

 private:
  double a_;
  int64_t n_ = 0;
  double m_ = 0;
  double d_ = 0;
};

}  // namespace trainwatch::detect

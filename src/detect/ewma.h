// Ewma: the step-aware exponentially weighted mean and mean absolute deviation every baseline uses
// (design section 1). Three scalars; plain averaging while n is small (warm start).
#pragma once

#include <cstdint>

namespace trainwatch::detect {

class Ewma {
 public:
  // `a` is the weight of one step; `a_max` caps the weight of one update, so that at sparse
  // cadences (100 steps per record and a 50-step time constant) the mean still spans records.
  explicit Ewma(double a, double a_max = 1.0) : a_(a), a_max_(a_max) {}

  // Learns x; `steps` (>= 1) is the number of steps since the previous update, so the time
  // constant stays in steps when a run logs only every N steps (up to the a_max cap).
  void Update(double x, int64_t steps = 1);

  int64_t count() const { return n_; }
  double mean() const { return m_; }
  double mad() const { return d_; }  // mean absolute deviation about the mean
  // Re-baselines the mean (throughput_drop after an alert).
  void set_mean(double m) { m_ = m; }

 private:
  double a_;
  double a_max_;
  int64_t n_ = 0;
  double m_ = 0;
  double d_ = 0;
};

}  // namespace trainwatch::detect

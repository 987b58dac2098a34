#include "detect/overfit_detector.h"

#include <algorithm>
#include <cmath>

namespace trainwatch::detect {

void OverfitDetector::Observe(int64_t step, double v, double train_level, std::string_view metric,
                              AlertSink& sink) {
  double lv = std::log(std::max(v, 1e-12));
  ++evals_;
  if (last_) {
    double d1 = lv - *last_;
    if (last_d1_) {
      // Second differences cancel a locally linear trend: E|d2| = 1.95 sigma for white noise.
      double d2 = std::abs(d1 - *last_d1_) / 1.95;
      noise_ = evals_ == 3 ? d2 : noise_ + options_.of_a * (d2 - noise_);
    }
    last_d1_ = d1;
  }
  last_ = lv;
  // The minimum of a noisy series is biased low: compare smoothed values.
  smooth_ = evals_ == 1 ? lv : smooth_ + options_.of_smooth * (lv - smooth_);
  if (!min_ || smooth_ < *min_) {
    min_ = smooth_;
    min_step_ = step;
    train_at_min_ = train_level;
    up_ = 0;
    since_min_ = 0;
    holding_ = false;
    return;
  }
  ++since_min_;
  double rise = smooth_ - *min_;
  double thr = std::max(std::log(1 + options_.of_rel), options_.of_k_noise * noise_);
  holding_ = rise > thr / 2;
  bool train_fell = train_level < train_at_min_ + std::log(1 - options_.of_train_drop);
  if (since_min_ <= options_.of_window && rise > thr && train_fell) {
    if (++up_ >= options_.of_k) {
      sink.Emit(AlertKind::kOverfitting, metric, step, rise,
                Format("eval loss up %.1f%% since its minimum at step %lld while train loss fell",
                       100 * (std::exp(rise) - 1), static_cast<long long>(min_step_)));
    }
  } else {
    up_ = 0;
  }
}

}  // namespace trainwatch::detect

#include "detect/loss_trend.h"

#include <algorithm>
#include <cmath>

namespace trainwatch::detect {

void LossTrendDetector::Observe(int64_t step, double ll, int64_t steps, bool ready, bool armed, int64_t persist,
                                bool sparse, std::optional<Shock>& shock, std::string_view metric,
                                AlertSink& sink) {
  recent_.Push(ll);
  slow_.Update(ll, steps);
  if (last_ll_) {
    double d = std::abs(ll - *last_ll_);
    dif_fast_.Update(d, steps);
    if (!shock || step - shock->step > options_.shock_window) dif_base_.Update(d, steps);
  }
  last_ll_ = ll;
  if (shock && step - shock->step > options_.shock_window) shock.reset();  // unclassified: close it
  if (shock && shock->ready) ClassifyShock(step, *shock, sparse, metric, sink);
  if (ready && armed && !shock) {
    GenericDivergence(step, persist, metric, sink);
  } else {
    div_since_.reset();  // the rise must hold on armed records only
  }
}

double LossTrendDetector::RecentLevel() const {
  return recent_.size() < recent_.capacity() ? slow_.mean() : recent_.Median();
}

void LossTrendDetector::ClassifyShock(int64_t step, const Shock& shock, bool sparse, std::string_view metric,
                                      AlertSink& sink) {
  int64_t age = step - shock.step;
  double rise = (sparse ? RecentLevel() : slow_.mean()) - shock.lo0;
  double vr = dif_fast_.mean() / std::max(shock.dif0, 1e-12);
  if (age >= options_.osc_age && age <= options_.osc_age + options_.osc_span && vr >= options_.osc_ratio) {
    if (sink.Emit(AlertKind::kLossOscillation, metric, step, vr,
                  Format("loss variability %.2fx its baseline after the lr excursion at step %lld", vr,
                         static_cast<long long>(shock.step)))) {
      osc_ref_ = std::max(shock.dif0, 1e-12);
    }
  } else if (age >= options_.osc_age + options_.osc_span && rise > options_.div_rise) {
    if (sink.Emit(AlertKind::kDivergence, metric, step, rise,
                  Format("smoothed log loss rose %.2f since the lr excursion at step %lld", rise,
                         static_cast<long long>(shock.step)))) {
      div_ref_ = shock.lo0;
    }
  }
}

void LossTrendDetector::GenericDivergence(int64_t step, int64_t persist, std::string_view metric,
                                          AlertSink& sink) {
  if (!lo_min_ || slow_.mean() < *lo_min_) lo_min_ = slow_.mean();
  double rise = slow_.mean() - *lo_min_;
  if (rise <= options_.sensitivity * options_.div_rise) {
    div_since_.reset();
    return;
  }
  if (!div_since_) {
    div_since_ = step;
    div_records_ = 0;
  }
  ++div_records_;
  if (step - *div_since_ >= options_.div_persist && div_records_ >= persist) {
    if (sink.Emit(AlertKind::kDivergence, metric, step, rise,
                  Format("smoothed loss %.4g is %.2fx its minimum %.4g, for %lld steps (%lld records)",
                         std::exp(slow_.mean()), std::exp(rise), std::exp(*lo_min_),
                         static_cast<long long>(step - *div_since_), static_cast<long long>(div_records_)),
                  Evidence{std::exp(slow_.mean()), std::exp(*lo_min_), std::exp(rise), div_records_})) {
      div_ref_ = *lo_min_;
    }
  }
}

}  // namespace trainwatch::detect

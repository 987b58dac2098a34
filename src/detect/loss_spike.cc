#include "detect/loss_spike.h"

#include <algorithm>
#include <cmath>

namespace trainwatch::detect {

void LossSpikeDetector::Report(int64_t step, const Excursion& e, std::string_view metric, AlertSink& sink) {
  const double ratio = std::exp(e.peak - e.base);
  sink.Emit(AlertKind::kLossSpike, metric, step, ratio,
            Format("%.*s %.4g at step %lld is %.1fx the median %.4g of the last %zu logged values",
                   static_cast<int>(metric.size()), metric.data(), std::exp(e.peak), static_cast<long long>(e.start),
                   ratio, std::exp(e.base), e.window_size),
            Evidence{std::exp(e.peak), std::exp(e.base), ratio, static_cast<int64_t>(e.window_size)});
}

double LossSpikeDetector::Noise(bool dense) const {
  // Logged every step, the level of a small-batch loss wanders between neighbouring records, and
  // a spike must clear that spread too; logged sparsely, the spread is mostly the trend between
  // records (the early fall of the loss), and only the record-to-record noise counts.
  return dense ? std::max(window_.Sigma(), window_.Spread()) : window_.Sigma();
}

void LossSpikeDetector::Observe(int64_t step, double ll, bool armed, bool dense, std::string_view metric,
                                AlertSink& sink) {
  window_.SetCapacity(options_.window);  // a rule reload may change it (no-op otherwise)
  if (!ready()) {
    window_.Push(ll);
    return;
  }
  const double med = window_.Median();
  // The noise term matters only above the ratio floor: most records never pay for it.
  const double floor = options_.sensitivity * std::log(options_.spike_ratio);
  const double thr = ll - med > floor || excursion_ ? std::max(floor, options_.sensitivity * options_.spike_k * Noise(dense))
                                                    : floor;
  if (excursion_) {
    Excursion& e = *excursion_;
    // One incident until the loss is back under half the threshold over the level it left.
    holding_ = ll - e.base > e.thr / 2;
    if (e.pending && (!holding_ || ll < e.peak - e.thr / 4)) {
      Report(step, e, metric, sink);  // coming back: confirmed
      e.pending = false;
    } else if (e.pending && e.records >= kConfirmRecords) {
      e.pending = false;  // still up: a level shift
    }
    e.peak = std::max(e.peak, ll);
    const bool new_level = ++e.records > options_.window && med - e.base > e.thr / 2;
    if (!holding_ || new_level) excursion_.reset();
    new_level_ = new_level;
  } else if (ll - med > thr) {
    excursion_ = Excursion{step, 1, med, thr, ll, armed, window_.size()};
    holding_ = true;
    if (armed && !dense) {
      Report(step, *excursion_, metric, sink);
      excursion_->pending = false;
    }
  } else {
    holding_ = false;
  }
  // Winsorised: an excursion raises the median only if it lasts (a new level is learned in about
  // half a window), never by its own height.
  window_.Push(std::min(ll, med + thr));
}

}  // namespace trainwatch::detect

#include "detect/loss_spike.h"

#include <algorithm>
#include <cmath>

namespace trainwatch::detect {

void LossSpikeDetector::Observe(int64_t step, double ll, int64_t steps, bool armed, std::string_view metric,
                                AlertSink& sink) {
  if (!ready()) {
    lo_.Update(ll, steps);
    return;
  }
  double sigma = options_.mad_to_sigma * lo_.mad();
  double thr = std::max(std::log(options_.spike_ratio), options_.spike_k * sigma);
  double z = ll - lo_.mean();
  bool high = z > thr;
  holding_ = z > thr / 2;
  // While a candidate is open the baseline is frozen: a level shift must not be "recovered" by a
  // baseline that chases it.
  if (!candidate_) {
    if (high && armed) {
      candidate_ = Candidate{step, z};
    } else {
      lo_.Update(std::min(ll, lo_.mean() + thr), steps);  // winsorised
    }
  } else if (!high) {
    double ratio = std::exp(candidate_->peak);
    sink.Emit(AlertKind::kLossSpike, metric, step, ratio,
              Format("loss jumped %.1fx over its baseline at step %lld and recovered", ratio,
                     static_cast<long long>(candidate_->start)));
    candidate_.reset();
    lo_.Update(ll, steps);
  } else if (step - candidate_->start + 1 >= options_.spike_maxlen) {
    candidate_.reset();  // still high: a level shift, not a spike
    lo_.Update(lo_.mean() + thr, steps);
  } else {
    candidate_->peak = std::max(candidate_->peak, z);
  }
}

}  // namespace trainwatch::detect

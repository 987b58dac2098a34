#include "detect/grad_vanishing.h"

#include <algorithm>
#include <cmath>

namespace trainwatch::detect {

void GradVanishingDetector::Observe(int64_t step, MetricSpan train, int64_t steps, AlertSink& sink) {
  const double limit = -std::log(options_.vanish_ratio);
  devs_.clear();
  for (const auto& [name, value] : train) {
    if (!name.starts_with(options_.bindings.layer_grad_norm_prefix) || !std::isfinite(value)) continue;
    double lv = std::log(std::max(value, 1e-30));
    auto it = layers_.find(name);
    if (it == layers_.end()) it = layers_.emplace(std::string(name), Ewma(options_.a_slow)).first;
    Ewma& e = it->second;
    if (e.count() >= options_.warm) {
      devs_.push_back(lv - e.mean());
      if (lv - e.mean() < limit) continue;  // do not learn the collapsed level
    }
    e.Update(lv, steps);
  }
  if (devs_.size() < 2) return;
  std::sort(devs_.begin(), devs_.end());
  double med = devs_[(devs_.size() - 1) / 2];  // lower median: at least half of the layers
  last_median_ = med;
  if (med < limit) {
    if (++count_ >= options_.vanish_persist) {
      double ratio = std::exp(med);
      sink.Emit(AlertKind::kGradVanishing, options_.bindings.layer_grad_norm_prefix, step, ratio,
                Format("median layer grad norm %.2g of its baseline for %lld records", ratio,
                       static_cast<long long>(count_)));
    }
  } else {
    count_ = 0;
  }
}

}  // namespace trainwatch::detect

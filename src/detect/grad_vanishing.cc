#include "detect/grad_vanishing.h"

#include <algorithm>
#include <cmath>

namespace trainwatch::detect {

void GradVanishingDetector::Observe(int64_t step, MetricSpan metrics, const std::vector<int>& layers,
                                    uint64_t layout_version, int64_t steps, int64_t warm,
                                    const Cadence& cadence, AlertSink& sink) {
  const int64_t persist = cadence.RecordsFor(options_.vanish_persist, kMinPersistRecords);
  if (layout_version != slots_version_) {
    slots_.clear();
    for (int i : layers) {
      std::string_view name = metrics[static_cast<size_t>(i)].first;
      auto it = layers_.find(name);
      if (it == layers_.end()) it = layers_.emplace(std::string(name), Ewma(options_.a_slow, options_.a_record_max)).first;
      slots_.push_back(&it->second);
    }
    slots_version_ = layout_version;
  }
  const double limit = -std::log(options_.vanish_ratio);
  devs_.clear();
  for (size_t k = 0; k < layers.size(); ++k) {
    double value = metrics[static_cast<size_t>(layers[k])].second;
    if (!std::isfinite(value)) continue;
    double lv = std::log(std::max(value, 1e-30));
    Ewma& e = *slots_[k];
    if (e.count() >= warm) {
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
    if (++count_ >= persist) {
      double ratio = std::exp(med);
      sink.Emit(AlertKind::kGradVanishing, options_.bindings.layer_grad_norm_prefix, step, ratio,
                Format("median layer grad norm %.2g of its baseline for %lld records", ratio,
                       static_cast<long long>(count_)),
                Evidence{NAN, NAN, ratio, count_});
    }
  } else {
    count_ = 0;
  }
}

}  // namespace trainwatch::detect

#include "detect/record_layout.h"

#include <cstring>

namespace trainwatch::detect {
namespace {

// The index of the first of `names` present among `candidates` of `metrics`, or kNone.
int First(MetricSpan metrics, const std::vector<int>& candidates, const std::vector<std::string>& names) {
  for (const std::string& n : names) {
    for (int i : candidates) {
      if (metrics[static_cast<size_t>(i)].first == n) return i;
    }
  }
  return RecordLayout::kNone;
}

}  // namespace

bool RecordLayout::Same(MetricSpan metrics) const {
  if (metrics.size() != names_.size()) return false;
  for (size_t i = 0; i < metrics.size(); ++i) {
    if (metrics[i].first != names_[i]) return false;
  }
  return true;
}

void RecordLayout::Update(MetricSpan metrics, const MetricBindings& bindings) {
  if (!names_.empty() && Same(metrics)) return;
  Resolve(metrics, bindings);
}

void RecordLayout::Resolve(MetricSpan metrics, const MetricBindings& bindings) {
  ++version_;
  names_.clear();
  train_.clear();
  layers_.clear();
  std::vector<int> all;
  for (size_t i = 0; i < metrics.size(); ++i) {
    std::string_view name = metrics[i].first;
    names_.emplace_back(name);
    all.push_back(static_cast<int>(i));
    if (IsEvalMetric(name, bindings)) continue;
    train_.push_back(static_cast<int>(i));
    if (name.starts_with(bindings.layer_grad_norm_prefix)) layers_.push_back(static_cast<int>(i));
  }
  loss = First(metrics, train_, bindings.loss);
  if (loss == kNone) {
    // The first training metric (in record order) ending in the fallback suffix, e.g. `ctc_loss`.
    for (int i : train_) {
      if (metrics[static_cast<size_t>(i)].first.ends_with(bindings.loss_fallback_suffix)) {
        loss = i;
        break;
      }
    }
  }
  grad_norm = First(metrics, train_, bindings.grad_norm);
  lr = First(metrics, train_, bindings.lr);
  update_ratio = First(metrics, train_, bindings.update_ratio);
  eval_loss = First(metrics, all, bindings.eval_loss);
}

}  // namespace trainwatch::detect

#include "detect/metric_bindings.h"

#include <cctype>

namespace trainwatch::detect {

bool IsEvalMetric(std::string_view name, const MetricBindings& bindings) {
  // A prefix counts as a whole word: "val_loss", "val/acc", "eval" — not "value_loss".
  for (const std::string& p : bindings.eval_prefixes) {
    if (name.starts_with(p) && (name.size() == p.size() || !std::isalnum(static_cast<unsigned char>(name[p.size()])))) {
      return true;
    }
  }
  return false;
}

std::optional<Picked> PickMetric(MetricSpan metrics, const std::vector<std::string>& names) {
  for (const std::string& n : names) {
    for (const auto& [name, value] : metrics) {
      if (name == n) return Picked{name, value};
    }
  }
  return std::nullopt;
}

std::optional<Picked> PickLoss(MetricSpan metrics, const MetricBindings& bindings) {
  if (auto v = PickMetric(metrics, bindings.loss)) return v;
  for (const auto& [name, value] : metrics) {
    if (name.ends_with(bindings.loss_fallback_suffix) && !IsEvalMetric(name, bindings)) return Picked{name, value};
  }
  return std::nullopt;
}

}  // namespace trainwatch::detect

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

}  // namespace trainwatch::detect

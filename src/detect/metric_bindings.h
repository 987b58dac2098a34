// Resolving metric roles (loss, lr, ...) in one record by the configured bindings.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "detect/options.h"

namespace trainwatch::detect {

using MetricSpan = std::span<const std::pair<std::string_view, double>>;

// A metric found for a role: its name (borrowed from the record) and value.
struct Picked {
  std::string_view name;
  double value;
};

// True if `name` starts with one of the eval prefixes.
bool IsEvalMetric(std::string_view name, const MetricBindings& bindings);

// The value of the first name in `names` present in `metrics` (in the order of `names`).
std::optional<Picked> PickMetric(MetricSpan metrics, const std::vector<std::string>& names);

// The train loss: the first bound loss name, else the first metric (in record order) that ends in
// the fallback suffix and is not an eval metric.
std::optional<Picked> PickLoss(MetricSpan metrics, const MetricBindings& bindings);

}  // namespace trainwatch::detect

// Metric names in records: the span detectors read, the role a metric found for a binding
// plays (record_layout.h resolves them), and which names are eval metrics.
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

}  // namespace trainwatch::detect

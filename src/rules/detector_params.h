// The built-in detectors' parameters as rule files name them, and DetectorSettings: one scope's
// overrides (the `detectors:` section, a project's, or a `detector:` rule's `params:`).
//
// Parameter names are the detect::DetectorOptions field names, grouped into sections: `common`
// (warm, a_slow), `lr` (the LR-context fields) and one section per alert kind (KindName). The
// table in docs/rules.md lists them all.
#pragma once

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "detect/alert.h"
#include "detect/options.h"

namespace trainwatch::rules {

enum class ParamType {
  kReal,     // a number
  kSeconds,  // a number of seconds or a duration ("60s", "5m")
  kCount,    // a whole number
  kFlag,     // true or false
};

// One tunable field of detect::DetectorOptions. Exactly one of the member pointers is set.
struct ParamSpec {
  std::string_view name;     // the field name, e.g. "spike_ratio"
  std::string_view section;  // "common", "lr" or an alert kind name
  ParamType type;
  double min, max;  // accepted range (inclusive unless the flags say otherwise)
  bool min_open, max_open;
  double detect::DetectorOptions::*real;
  int64_t detect::DetectorOptions::*count;
  bool detect::DetectorOptions::*flag;
  std::string_view meaning;
};

// Every parameter, sections in the order common, lr, then the kinds' order.
std::span<const ParamSpec> ParamSpecs();
// nullptr if no parameter has that name.
const ParamSpec* FindParam(std::string_view name);
// True for "common", "lr" and every kind name.
bool IsSection(std::string_view name);
// The scale of a named sensitivity: "low" 1.5 (thresholds 1.5x further on the log scale: fewer
// alerts), "default" 1, "high" 0.7 (earlier alerts); nullopt for any other name.
std::optional<double> SensitivityScale(std::string_view name);
// The default value of `spec` as docs print it ("3", "300", "false").
std::string DefaultValueText(const ParamSpec& spec);

// A scope's overrides, in the order they were set. A plain value type.
class DetectorSettings {
 public:
  // Sets `section.param` from its text as written. `enabled` (true/false) is accepted for every
  // kind section. InvalidArgument naming the detector, the parameter and the reason: an unknown
  // section or parameter, a parameter of another section, a malformed or out-of-range value.
  Status Set(std::string_view section, std::string_view param, std::string_view value);
  // Sets a MetricBindings field: the list fields take any number of names, the string fields
  // (loss_fallback_suffix, layer_grad_norm_prefix) exactly one. InvalidArgument otherwise.
  Status SetBinding(std::string_view field, std::vector<std::string> values);

  // Writes every override into *options (later settings of the same field win).
  void ApplyTo(detect::DetectorOptions* options) const;
  // The `enabled:` setting of `kind` in this scope, if any.
  std::optional<bool> enabled(detect::AlertKind kind) const {
    return enabled_[static_cast<size_t>(kind)];
  }
  bool empty() const;

  // The overrides as set, for listings: (parameter, value; flags and counts as doubles) and
  // (binding field, names).
  const std::vector<std::pair<const ParamSpec*, double>>& params() const { return params_; }
  const std::vector<std::pair<std::string, std::vector<std::string>>>& bindings() const {
    return bindings_;
  }

 private:
  std::vector<std::pair<const ParamSpec*, double>> params_;  // flags and counts stored as doubles
  std::vector<std::pair<std::string, std::vector<std::string>>> bindings_;
  std::array<std::optional<bool>, detect::kAlertKindCount> enabled_{};
};

}  // namespace trainwatch::rules

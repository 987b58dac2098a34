// RuleEvent: what rule evaluation hands to the notifier — an expression rule starting to fire or
// resolving, or a built-in detector's alert decorated by its `detector:` rule.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "detect/alert.h"
#include "rules/rule.h"

namespace trainwatch::rules {

struct RuleEvent {
  // kPending: an expression rule's condition holds but not yet for its `for`; kResolved also ends
  // a pending rule whose condition cleared before its hold was done (it never fired).
  enum class State { kPending, kFiring, kResolved };

  std::string rule;   // the alert name (a built-in alert without a rule: its kind name)
  std::string group;  // "" for a built-in alert without a rule
  std::string run;
  State state = State::kFiring;
  int64_t step = 0;    // the record that caused the transition
  double time = 0;     // that record's own timestamp (NaN when it had none)
  double value = 0;    // the first comparison's left-hand side (built-in: the detector's statistic)
  std::string metric;  // the first metric the expression references (built-in: the alert's)
  std::string severity;                            // info, warning or critical
  std::map<std::string, std::string> labels;       // the rule's labels, "severity" included
  std::map<std::string, std::string> annotations;  // templates expanded
  // The `summary` annotation if there is one, else "<expr> (value V at step S)"; "resolved: "
  // before either for a resolution. Built-in alerts: see EventFromAlert.
  std::string message;
};

std::string_view StateName(RuleEvent::State state);  // "firing" or "resolved"

// A built-in detector's alert (firing or resolved, as alert.state says) as an event: `rule` (may
// be null: no decoration) supplies the alert name, group, severity, labels and annotations,
// expanded with the alert's value, step and metric. The message is the rule's `summary` if it has
// one (prefixed "resolved: " for a resolution), else the detector's own message.
RuleEvent EventFromAlert(const detect::Alert& alert, const DetectorRule* rule,
                         std::string_view project);

// Expands every annotation of a rule with `vars` (labels filled in by the caller).
std::map<std::string, std::string> ExpandAnnotations(
    const std::map<std::string, Template>& annotations, const TemplateVars& vars);

}  // namespace trainwatch::rules

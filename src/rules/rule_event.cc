#include "rules/rule_event.h"

namespace trainwatch::rules {

std::string_view StateName(RuleEvent::State state) {
  switch (state) {
    case RuleEvent::State::kPending: return "pending";
    case RuleEvent::State::kFiring: return "firing";
    case RuleEvent::State::kResolved: return "resolved";
  }
  return "unknown";
}

std::map<std::string, std::string> ExpandAnnotations(
    const std::map<std::string, Template>& annotations, const TemplateVars& vars) {
  std::map<std::string, std::string> out;
  for (const auto& [name, t] : annotations) out.emplace(name, t.Expand(vars));
  return out;
}

RuleEvent EventFromAlert(const detect::Alert& alert, const DetectorRule* rule,
                         std::string_view project) {
  RuleEvent e;
  e.run = alert.run;
  e.state = alert.state == detect::AlertState::kResolved ? RuleEvent::State::kResolved
                                                          : RuleEvent::State::kFiring;
  e.step = alert.step;
  e.time = alert.time;
  e.value = alert.value;
  e.metric = alert.metric;
  e.message = alert.message;
  if (rule == nullptr) {
    e.rule = alert.kind;
    e.severity = alert.severity;
    e.labels["severity"] = alert.severity;
    return e;
  }
  e.rule = rule->alert;
  e.group = rule->group;
  e.severity = rule->severity;
  e.labels = rule->labels;
  TemplateVars vars{.value = alert.value,
                    .step = alert.step,
                    .run = alert.run,
                    .project = project,
                    .alert = rule->alert,
                    .metric = alert.metric,
                    .labels = &rule->labels};
  e.annotations = ExpandAnnotations(rule->annotations, vars);
  if (auto it = e.annotations.find("summary"); it != e.annotations.end()) {
    e.message = e.state == RuleEvent::State::kResolved ? "resolved: " + it->second : it->second;
  }
  return e;
}

}  // namespace trainwatch::rules

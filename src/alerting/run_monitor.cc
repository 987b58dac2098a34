#include "alerting/run_monitor.h"

#include <nlohmann/json.hpp>

#include "alerting/alert_record.h"
#include "rules/rule_event.h"

namespace trainwatch::alerting {

std::string AlertEventToJson(const std::string& run, const AlertEvent& e) {
  nlohmann::ordered_json j{{"run", run},           {"kind", e.kind},         {"metric", e.metric},
                           {"step", e.step},       {"time", FiniteOrNull(e.time)}, {"value", FiniteOrNull(e.value)},
                           {"severity", e.severity}, {"message", e.message}, {"name", e.name}};
  if (!e.labels.empty()) j["labels"] = e.labels;
  if (e.type != AlertEvent::Type::kFiring) {
    j["state"] = e.type == AlertEvent::Type::kResolved ? "resolved" : "pending";
  }
  return j.dump();
}

RunMonitor::RunMonitor(std::string project, std::string run, std::shared_ptr<const rules::RuleSet> rules)
    : project_(std::move(project)),
      run_(std::move(run)),
      rules_(rules),
      detector_(run_, rules->DetectorOptionsFor(project_)),
      evaluator_(run_, project_, rules) {}

void RunMonitor::Observe(int64_t step, double time, std::span<const std::pair<std::string_view, double>> metrics,
                         std::vector<AlertEvent>* out) {
  detector_alerts_.clear();
  detector_.Observe(step, time, metrics, &detector_alerts_);
  TakeDetectorAlerts(out);
  rule_events_.clear();
  evaluator_.Observe(step, time, metrics, &rule_events_);
  TakeRuleEvents(out);
}

void RunMonitor::CheckStalled(double now, std::vector<AlertEvent>* out) {
  detector_alerts_.clear();
  detector_.CheckStalled(now, &detector_alerts_);
  TakeDetectorAlerts(out);
}

void RunMonitor::Rebind(std::shared_ptr<const rules::RuleSet> rules) {
  rules_ = rules;
  detector_.SetOptions(rules_->DetectorOptionsFor(project_));
  rule_events_.clear();
  evaluator_.Rebind(std::move(rules), &rule_events_);
  pending_rebind_events_.insert(pending_rebind_events_.end(), rule_events_.begin(), rule_events_.end());
}

void RunMonitor::TakeDetectorAlerts(std::vector<AlertEvent>* out) {
  for (const detect::Alert& alert : detector_alerts_) {
    auto kind = detect::KindFromName(alert.kind);
    if (!kind || !rules_->KindEnabled(project_, *kind)) continue;
    rules::RuleEvent decorated = rules::EventFromAlert(alert, rules_->DetectorRuleFor(project_, *kind), project_);
    AlertEvent e;
    e.type = alert.state == detect::AlertState::kResolved ? AlertEvent::Type::kResolved : AlertEvent::Type::kFiring;
    e.kind = alert.kind;
    e.name = alert.kind;  // one incident per kind and run, whatever decorates it
    e.metric = alert.metric;
    e.severity = decorated.severity;
    e.message = alert.state == detect::AlertState::kResolved ? alert.message : decorated.message;
    e.step = alert.step;
    e.time = alert.time;
    e.value = alert.value;
    e.labels = std::move(decorated.labels);
    if (!decorated.group.empty()) e.labels["rule"] = decorated.rule;
    e.annotations = std::move(decorated.annotations);
    out->push_back(std::move(e));
  }
}

void RunMonitor::TakeRuleEvents(std::vector<AlertEvent>* out) {
  if (!pending_rebind_events_.empty()) {
    rule_events_.insert(rule_events_.begin(), pending_rebind_events_.begin(), pending_rebind_events_.end());
    pending_rebind_events_.clear();
  }
  for (rules::RuleEvent& r : rule_events_) {
    AlertEvent e;
    switch (r.state) {
      case rules::RuleEvent::State::kPending: e.type = AlertEvent::Type::kPending; break;
      case rules::RuleEvent::State::kFiring: e.type = AlertEvent::Type::kFiring; break;
      case rules::RuleEvent::State::kResolved: e.type = AlertEvent::Type::kResolved; break;
    }
    e.kind = "rule";
    e.name = std::move(r.rule);
    e.metric = std::move(r.metric);
    e.severity = std::move(r.severity);
    e.message = std::move(r.message);
    e.step = r.step;
    e.time = r.time;
    e.value = r.value;
    e.labels = std::move(r.labels);
    if (!r.group.empty()) e.labels["group"] = r.group;
    e.annotations = std::move(r.annotations);
    out->push_back(std::move(e));
  }
}

}  // namespace trainwatch::alerting

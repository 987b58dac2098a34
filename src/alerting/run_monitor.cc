#include "alerting/run_monitor.h"

#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "alerting/alert_record.h"
#include "rules/rule_event.h"

namespace trainwatch::alerting {

std::string AlertEventToJson(const std::string& run, const AlertEvent& e) {
  nlohmann::ordered_json j{{"run", run},
                           {"kind", e.kind},
                           {"metric", e.metric},
                           {"step", e.step},
                           {"time", FiniteOrNull(e.time)},
                           {"value", FiniteOrNull(e.value)},
                           {"severity", e.severity},
                           {"message", e.message},
                           {"name", e.name}};
  if (e.rank >= 0) {
    j["rank"] = e.rank;
    j["host"] = e.host;
  }
  if (!e.labels.empty()) j["labels"] = e.labels;
  if (std::isfinite(e.evidence.ratio)) {
    j["evidence"] = {{"observed", FiniteOrNull(e.evidence.observed)},
                     {"baseline", FiniteOrNull(e.evidence.baseline)},
                     {"ratio", FiniteOrNull(e.evidence.ratio)},
                     {"records", e.evidence.records}};
  }
  if (e.type != AlertEvent::Type::kFiring) {
    j["state"] = e.type == AlertEvent::Type::kResolved ? "resolved" : "pending";
  }
  return j.dump();
}

namespace {

// The evidence as annotations, which every receiver (webhook, Slack, Alertmanager, the API and
// the dashboard) already shows; a rule's own annotation of the same name wins.
void AddEvidence(const detect::Evidence& evidence,
                 std::map<std::string, std::string>* annotations) {
  if (!std::isfinite(evidence.ratio)) return;
  char buf[32];
  auto put = [&](const char* key, double v) {
    if (!std::isfinite(v)) return;
    std::snprintf(buf, sizeof buf, "%.6g", v);
    annotations->emplace(key, buf);
  };
  put("observed", evidence.observed);
  put("baseline", evidence.baseline);
  put("ratio", evidence.ratio);
  if (evidence.records > 0)
    annotations->emplace("judged_on_records", std::to_string(evidence.records));
}

}  // namespace

RunMonitor::RunMonitor(std::string project, std::string run,
                       std::shared_ptr<const rules::RuleSet> rules)
    : project_(std::move(project)),
      run_(std::move(run)),
      rules_(rules),
      detector_(run_, rules->DetectorOptionsFor(project_)),
      ranks_(detector_.run(), detector_.options()),
      evaluator_(run_, project_, rules) {}

void RunMonitor::Observe(int64_t step, double time,
                         std::span<const std::pair<std::string_view, double>> metrics,
                         std::vector<AlertEvent>* out) {
  detector_alerts_.clear();
  detector_.Observe(step, time, metrics, &detector_alerts_);
  if (ranks_.distributed()) {
    // A distributed run's `nan` is the rank detector's, attributed to the rank that showed it
    // first.
    std::erase_if(detector_alerts_, [](const detect::Alert& a) { return a.kind == "nan"; });
  }
  TakeDetectorAlerts(out);
  rule_events_.clear();
  evaluator_.Observe(step, time, metrics, &rule_events_);
  TakeRuleEvents(out);
}

void RunMonitor::ObserveBatch(const v1::RunBatch& batch, std::vector<AlertEvent>* out,
                              double arrival) {
  const int rows = batch.steps_size();
  if (rows_.size() < static_cast<size_t>(rows)) rows_.resize(static_cast<size_t>(rows));
  for (int r = 0; r < rows; ++r) rows_[static_cast<size_t>(r)].clear();
  for (const v1::MetricColumn& column : batch.metrics()) {
    for (int i = 0; i < column.values_size(); ++i) {
      int row = column.rows_size() ? static_cast<int>(column.rows(i)) : i;
      if (row < rows) rows_[static_cast<size_t>(row)].emplace_back(column.name(), column.values(i));
    }
  }
  const bool ranked = batch.has_rank();
  const bool run_level = !ranked || batch.rank().rank() == 0;
  detect::RankId id;
  if (ranked) {
    id.rank = batch.rank().rank();
    id.world_size = batch.rank().world_size();
    id.local_rank = batch.rank().local_rank();
    id.host = batch.rank().host();
  }
  for (int r = 0; r < rows; ++r) {
    if (rows_[static_cast<size_t>(r)].empty()) continue;
    double time = r < batch.times_size() ? batch.times(r) : NAN;
    if (ranked) {
      detector_alerts_.clear();
      ranks_.Observe(id, batch.steps(r), time, arrival, rows_[static_cast<size_t>(r)],
                     &detector_alerts_);
      TakeDetectorAlerts(out);
    }
    // Other ranks' rows never feed the run-level detectors: interleaved, they would look like
    // noise.
    if (run_level) Observe(batch.steps(r), time, rows_[static_cast<size_t>(r)], out);
  }
  if (ranked) {
    detector_alerts_.clear();
    const double heartbeat = batch.has_heartbeat() ? batch.heartbeat().interval_seconds() : 0;
    ranks_.Heard(id, arrival, heartbeat, &detector_alerts_);
    TakeDetectorAlerts(out);
  }
}

void RunMonitor::CheckRanks(double now, std::vector<AlertEvent>* out) {
  detector_alerts_.clear();
  ranks_.Check(now, &detector_alerts_);
  TakeDetectorAlerts(out);
}

bool RunMonitor::RankFinished(uint32_t rank) {
  ranks_.Finished(rank);
  return ranks_.AllFinished();
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
  pending_rebind_events_.insert(pending_rebind_events_.end(), rule_events_.begin(),
                                rule_events_.end());
}

void RunMonitor::TakeDetectorAlerts(std::vector<AlertEvent>* out) {
  for (const detect::Alert& alert : detector_alerts_) {
    auto kind = detect::KindFromName(alert.kind);
    if (!kind || !rules_->KindEnabled(project_, *kind)) continue;
    rules::RuleEvent decorated =
        rules::EventFromAlert(alert, rules_->DetectorRuleFor(project_, *kind), project_);
    AlertEvent e;
    e.type = alert.state == detect::AlertState::kResolved ? AlertEvent::Type::kResolved
                                                          : AlertEvent::Type::kFiring;
    e.kind = alert.kind;
    e.name = alert.kind;  // one incident per kind and run, whatever decorates it
    e.metric = alert.metric;
    e.severity = decorated.severity;
    e.message = alert.state == detect::AlertState::kResolved ? alert.message : decorated.message;
    e.step = alert.step;
    e.time = alert.time;
    e.value = alert.value;
    e.rank = alert.rank;
    e.host = alert.host;
    e.evidence = alert.evidence;
    e.labels = std::move(decorated.labels);
    for (const auto& [k, v] : alert.labels) e.labels.emplace(k, v);
    if (!decorated.group.empty()) e.labels["rule"] = decorated.rule;
    e.annotations = std::move(decorated.annotations);
    AddEvidence(alert.evidence, &e.annotations);
    out->push_back(std::move(e));
  }
}

void RunMonitor::TakeRuleEvents(std::vector<AlertEvent>* out) {
  if (!pending_rebind_events_.empty()) {
    rule_events_.insert(rule_events_.begin(), pending_rebind_events_.begin(),
                        pending_rebind_events_.end());
    pending_rebind_events_.clear();
  }
  for (rules::RuleEvent& r : rule_events_) {
    AlertEvent e;
    switch (r.state) {
      case rules::RuleEvent::State::kPending:
        e.type = AlertEvent::Type::kPending;
        break;
      case rules::RuleEvent::State::kFiring:
        e.type = AlertEvent::Type::kFiring;
        break;
      case rules::RuleEvent::State::kResolved:
        e.type = AlertEvent::Type::kResolved;
        break;
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

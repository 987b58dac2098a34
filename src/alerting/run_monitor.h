// RunMonitor: everything that watches one run — the built-in detectors (detect::RunDetector) and
// the user's rules (rules::RunRuleEvaluator) — behind one call per record. The server and the
// offline `trainwatch detect` both feed records through it: one code path.
//
// Thread-safety: none; one owner calls it.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "detect/rank_detector.h"
#include "detect/run_detector.h"
#include "rules/rule_set.h"
#include "rules/run_rule_evaluator.h"
#include "trainwatch/v1/ingest.pb.h"

namespace trainwatch::alerting {

// One lifecycle event of one incident of one run.
struct AlertEvent {
  enum class Type { kPending, kFiring, kResolved };
  Type type = Type::kFiring;
  std::string kind;  // a detector kind or "rule"
  std::string name;  // the rule's alert name; the kind for built-in detectors (or its `detector:`
                     // rule's name)
  std::string metric, severity, message;
  int64_t step = 0;
  double time = 0;  // the record's timestamp (NaN when it had none)
  double value = 0;
  // The rank of a distributed run the incident concerns and its host (-1 / "": the run). Part of
  // the incident's identity: one incident per (run, kind, name, rank).
  int64_t rank = -1;
  std::string host;
  detect::Evidence evidence;  // built-in detectors: what the alert was judged on
  std::map<std::string, std::string> labels, annotations;
};

// The offline command's JSON line for an event, one object without a newline:
// {"run","kind","metric","step","time","value","severity","message","name"}, plus "rank" and
// "host" when it concerns one rank, "labels" when set, "evidence"
// ({"observed","baseline","ratio","records"}) when a detector gave it, and "state" ("pending",
// "resolved") unless firing; non-finite numbers are null.
std::string AlertEventToJson(const std::string& run, const AlertEvent& event);

class RunMonitor {
 public:
  // `rules` must not be null (an empty RuleSet means defaults and no rules).
  RunMonitor(std::string project, std::string run, std::shared_ptr<const rules::RuleSet> rules);
  RunMonitor(const RunMonitor&) = delete;
  RunMonitor& operator=(const RunMonitor&) = delete;

  // One record (all metrics of one step; names borrowed for the call only).
  void Observe(int64_t step, double time,
               std::span<const std::pair<std::string_view, double>> metrics,
               std::vector<AlertEvent>* out);
  // Every row of one committed batch, in order: the rows as the server's detection sees them
  // (the offline command feeds its parsed lines through here too). The run-level detectors and
  // the rules see the run-level view only: rows without a rank and rank 0's. The rows and the
  // heartbeat of a batch with a rank go to the rank detectors; `arrival` is when the batch
  // arrived (the server's clock; NaN offline: the rows' times stand in).
  void ObserveBatch(const v1::RunBatch& batch, std::vector<AlertEvent>* out, double arrival = NAN);
  // `stalled` against `now` on the records' clock.
  void CheckStalled(double now, std::vector<AlertEvent>* out);
  // rank_dead and collective_hang against `now` on the arrival clock of ObserveBatch.
  void CheckRanks(double now, std::vector<AlertEvent>* out);
  // A rank reported `finished` (or `crashed`): returns true when every rank the run has shown is
  // done, i.e. the run is over.
  bool RankFinished(uint32_t rank);
  // A rule reload: thresholds change in place, rules that did not change keep their state; rules
  // that were firing and are gone resolve with the next record.
  void Rebind(std::shared_ptr<const rules::RuleSet> rules);

  const std::string& project() const { return project_; }
  const std::string& run() const { return run_; }

 private:
  void TakeDetectorAlerts(std::vector<AlertEvent>* out);
  void TakeRuleEvents(std::vector<AlertEvent>* out);

  const std::string project_;
  const std::string run_;
  std::shared_ptr<const rules::RuleSet> rules_;
  detect::RunDetector detector_;
  detect::RankDetector ranks_;  // reads detector_'s run and options
  rules::RunRuleEvaluator evaluator_;
  std::vector<detect::Alert> detector_alerts_;                          // scratch
  std::vector<std::vector<std::pair<std::string_view, double>>> rows_;  // scratch of ObserveBatch
  std::vector<rules::RuleEvent> rule_events_;                           // scratch
  // Resolutions of rules a reload removed, reported with the next record.
  std::vector<rules::RuleEvent> pending_rebind_events_;
};

}  // namespace trainwatch::alerting

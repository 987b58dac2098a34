// RunRuleEvaluator: the expression rules of one run, evaluated on every record (docs/rules.md,
// "Evaluation").
//
// A rule is evaluated on each record that carries at least one metric it references, with the
// newest value of every referenced metric, once all of them have been seen. Its lifecycle:
// inactive -> pending (condition true) -> firing (true for its whole `for` hold, measured in
// record time or steps from the first true record; at once without a hold) -> inactive again when
// a later evaluation is false (a kResolved event). Entering pending is a kPending event; a pending
// rule whose condition turns false (or that a resume drops) ends with a kResolved event too.
//
// A resumed run (a record's step lower than the previous record's) clears every window and newest
// value and drops pending holds; firing rules stay firing until an evaluation is false.
//
// State is bounded: per referenced metric its newest value and a window as large as the largest
// N the rules ask of it (window.h); per rule a few scalars. Observe does O(metrics in the record +
// size of the expressions it evaluates) work, allocation-free once warm (apart from events).
//
// Thread-safety: none; one owner calls it (the server serialises per run).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "rules/rule_event.h"
#include "rules/rule_set.h"
#include "rules/window.h"

namespace trainwatch::rules {

class RunRuleEvaluator {
 public:
  enum class RuleState { kInactive, kPending, kFiring };

  // Evaluates rules->RulesFor(project). `rules` must not be null; it is kept alive.
  RunRuleEvaluator(std::string run, std::string project, std::shared_ptr<const RuleSet> rules);
  RunRuleEvaluator(const RunRuleEvaluator&) = delete;
  RunRuleEvaluator& operator=(const RunRuleEvaluator&) = delete;

  // One record: all metrics of one step (names borrowed for the call only), its own timestamp in
  // unix seconds (NaN when it has none). Events are appended to *out in rule (file) order.
  void Observe(int64_t step, double time,
               std::span<const std::pair<std::string_view, double>> metrics,
               std::vector<RuleEvent>* out);

  // Switches to `rules` (a reload). A rule whose Fingerprint() is unchanged keeps its state and
  // hold; a firing rule that is gone (removed, or its group/alert/expr/for changed) yields a
  // kResolved event at the last record seen. Windows of metrics still referenced keep their values
  // as far as the new windows need them. `rules` must not be null.
  void Rebind(std::shared_ptr<const RuleSet> rules, std::vector<RuleEvent>* out);

  // One rule's current state, for listings.
  struct RuleStatus {
    const Rule* rule;  // owned by rules()
    RuleState state;
    int64_t since_step;  // pending/firing: the first true record
    double since_time;
    double value;  // at the last evaluation (NaN before the first)
  };
  std::vector<RuleStatus> Statuses() const;

  size_t rule_count() const { return rules_.size(); }
  const std::string& run() const { return run_; }
  const std::string& project() const { return project_; }
  const std::shared_ptr<const RuleSet>& rule_set() const { return rule_set_; }

 private:
  // One referenced metric.
  struct Slot {
    std::string name;
    double latest = 0;
    bool seen = false;
    MetricWindow window;
    std::vector<uint32_t> rules;  // indexes into rules_ of the rules that reference it
  };
  // One rule, bound to this run's slots.
  struct Bound {
    const Rule* rule = nullptr;
    std::vector<uint32_t> metric_slots;                // per expr.metrics()
    std::vector<std::pair<uint32_t, size_t>> windows;  // per expr.windows(): slot, window handle
    RuleState state = RuleState::kInactive;
    int64_t since_step = 0;
    double since_time = 0;
    double value = 0;
    uint64_t stamp = 0;  // the last record that scheduled it
  };
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  void Bind();
  // Clears windows; pending rules end (a kResolved event each).
  void Resume(int64_t step, double time, std::vector<RuleEvent>* out);
  void Evaluate(Bound& b, int64_t step, double time, std::vector<RuleEvent>* out);
  bool HoldDone(const Bound& b, int64_t step, double time) const;
  RuleEvent MakeEvent(const Rule& rule, RuleEvent::State state, int64_t step, double time,
                      double value) const;

  const std::string run_;
  const std::string project_;
  std::shared_ptr<const RuleSet> rule_set_;
  std::vector<Bound> rules_;
  std::vector<Slot> slots_;
  std::unordered_map<std::string, uint32_t, NameHash, std::equal_to<>> slot_index_;

  std::optional<int64_t> last_step_;
  double last_time_ = 0;
  uint64_t stamp_ = 0;
  // Scratch, reused across records.
  std::vector<uint32_t> touched_;
  std::vector<double> latest_;
  std::vector<double> window_values_;
};

}  // namespace trainwatch::rules

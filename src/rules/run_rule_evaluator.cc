#include "rules/run_rule_evaluator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace trainwatch::rules {
namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

RunRuleEvaluator::RunRuleEvaluator(std::string run, std::string project,
                                   std::shared_ptr<const RuleSet> rules)
    : run_(std::move(run)), project_(std::move(project)), rule_set_(std::move(rules)) {
  Bind();
}

void RunRuleEvaluator::Bind() {
  rules_.clear();
  slots_.clear();
  slot_index_.clear();
  for (const Rule* rule : rule_set_->RulesFor(project_)) {
    const auto index = static_cast<uint32_t>(rules_.size());
    Bound b;
    b.rule = rule;
    b.value = kNaN;
    b.since_time = kNaN;
    auto slot_of = [&](const std::string& name) {
      auto [it, inserted] = slot_index_.try_emplace(name, static_cast<uint32_t>(slots_.size()));
      if (inserted) {
        slots_.emplace_back();
        slots_.back().name = name;
        slots_.back().latest = kNaN;
      }
      return it->second;
    };
    for (const std::string& name : rule->expr.metrics()) {
      uint32_t slot = slot_of(name);
      b.metric_slots.push_back(slot);
      slots_[slot].rules.push_back(index);
    }
    for (const WindowRef& w : rule->expr.windows()) {
      uint32_t slot = slot_of(w.metric);
      b.windows.emplace_back(slot, slots_[slot].window.Add(w.fn, w.n));
    }
    rules_.push_back(std::move(b));
  }
}

void RunRuleEvaluator::Resume(int64_t step, double time, std::vector<RuleEvent>* out) {
  for (Slot& s : slots_) {
    s.latest = kNaN;
    s.seen = false;
    s.window.Clear();
  }
  for (Bound& b : rules_) {
    if (b.state != RuleState::kPending) continue;
    b.state = RuleState::kInactive;
    RuleEvent e = MakeEvent(*b.rule, RuleEvent::State::kResolved, step, time, b.value);
    e.message = "resolved: the run resumed from an earlier step before the hold was done";
    out->push_back(std::move(e));
  }
}

void RunRuleEvaluator::Observe(int64_t step, double time,
                               std::span<const std::pair<std::string_view, double>> metrics,
                               std::vector<RuleEvent>* out) {
  if (last_step_ && step < *last_step_) Resume(step, time, out);
  last_step_ = step;
  last_time_ = time;
  if (slots_.empty()) return;
  ++stamp_;
  touched_.clear();
  for (const auto& [name, value] : metrics) {
    auto it = slot_index_.find(name);
    if (it == slot_index_.end()) continue;
    Slot& slot = slots_[it->second];
    slot.latest = value;
    slot.seen = true;
    slot.window.Push(value);
    for (uint32_t r : slot.rules) {
      if (rules_[r].stamp == stamp_) continue;
      rules_[r].stamp = stamp_;
      touched_.push_back(r);
    }
  }
  std::sort(touched_.begin(), touched_.end());
  for (uint32_t r : touched_) Evaluate(rules_[r], step, time, out);
}

bool RunRuleEvaluator::HoldDone(const Bound& b, int64_t step, double time) const {
  const Hold& hold = b.rule->hold;
  switch (hold.unit) {
    case Hold::Unit::kNone:
      return true;
    case Hold::Unit::kSteps:
      return step - b.since_step >= hold.steps;
    case Hold::Unit::kSeconds:
      return std::isfinite(time) && std::isfinite(b.since_time) &&
             time - b.since_time >= hold.seconds;
  }
  return false;
}

void RunRuleEvaluator::Evaluate(Bound& b, int64_t step, double time, std::vector<RuleEvent>* out) {
  latest_.clear();
  for (uint32_t s : b.metric_slots) {
    if (!slots_[s].seen) return;  // a referenced metric not seen yet: not evaluated
    latest_.push_back(slots_[s].latest);
  }
  window_values_.clear();
  for (const auto& [s, handle] : b.windows)
    window_values_.push_back(slots_[s].window.Value(handle));
  const Expr::Outcome outcome = b.rule->expr.Evaluate(latest_, window_values_);
  b.value = outcome.value;
  if (!outcome.holds) {
    if (b.state != RuleState::kInactive) {
      out->push_back(MakeEvent(*b.rule, RuleEvent::State::kResolved, step, time, outcome.value));
    }
    b.state = RuleState::kInactive;
    return;
  }
  if (b.state == RuleState::kFiring) return;
  if (b.state == RuleState::kInactive) {
    b.state = RuleState::kPending;
    b.since_step = step;
    b.since_time = time;
  } else if (!std::isfinite(b.since_time)) {
    b.since_time = time;  // the hold's clock starts at the first true record that has a time
  }
  if (HoldDone(b, step, time)) {
    b.state = RuleState::kFiring;
    out->push_back(MakeEvent(*b.rule, RuleEvent::State::kFiring, step, time, outcome.value));
  } else if (b.since_step == step) {
    out->push_back(MakeEvent(*b.rule, RuleEvent::State::kPending, step, time, outcome.value));
  }
}

RuleEvent RunRuleEvaluator::MakeEvent(const Rule& rule, RuleEvent::State state, int64_t step,
                                      double time, double value) const {
  RuleEvent e;
  e.rule = rule.alert;
  e.group = rule.group;
  e.run = run_;
  e.state = state;
  e.step = step;
  e.time = time;
  e.value = value;
  e.metric = rule.expr.metrics().front();
  e.severity = rule.severity;
  e.labels = rule.labels;
  TemplateVars vars{.value = value,
                    .step = step,
                    .run = run_,
                    .project = project_,
                    .alert = rule.alert,
                    .metric = e.metric,
                    .labels = &rule.labels};
  e.annotations = ExpandAnnotations(rule.annotations, vars);
  if (auto it = e.annotations.find("summary"); it != e.annotations.end()) {
    e.message = it->second;
  } else {
    e.message = rule.expr.text() + " (value " + FormatValue(value) + " at step " +
                std::to_string(step) + ")";
  }
  if (state == RuleEvent::State::kResolved) e.message = "resolved: " + e.message;
  return e;
}

void RunRuleEvaluator::Rebind(std::shared_ptr<const RuleSet> rules, std::vector<RuleEvent>* out) {
  std::shared_ptr<const RuleSet> old_set =
      std::move(rule_set_);  // keeps the old Rule pointers alive
  std::vector<Bound> old_rules = std::move(rules_);
  std::vector<Slot> old_slots = std::move(slots_);
  auto old_index = std::move(slot_index_);
  rule_set_ = std::move(rules);
  Bind();

  for (Slot& slot : slots_) {
    auto it = old_index.find(slot.name);
    if (it == old_index.end()) continue;
    const Slot& old = old_slots[it->second];
    slot.latest = old.latest;
    slot.seen = old.seen;
    slot.window.CopyValuesFrom(old.window);
  }

  std::multimap<std::string, size_t> old_by_fingerprint;
  for (size_t i = 0; i < old_rules.size(); ++i) {
    if (old_rules[i].state != RuleState::kInactive)
      old_by_fingerprint.emplace(old_rules[i].rule->Fingerprint(), i);
  }
  for (Bound& b : rules_) {
    auto it = old_by_fingerprint.find(b.rule->Fingerprint());
    if (it == old_by_fingerprint.end()) continue;
    const Bound& old = old_rules[it->second];
    b.state = old.state;
    b.since_step = old.since_step;
    b.since_time = old.since_time;
    b.value = old.value;
    old_by_fingerprint.erase(it);
  }
  // What is left did not survive the reload.
  std::vector<size_t> gone;
  for (const auto& [fingerprint, i] : old_by_fingerprint) {
    if (old_rules[i].state != RuleState::kInactive) gone.push_back(i);
  }
  std::sort(gone.begin(), gone.end());
  for (size_t i : gone) {
    const Bound& old = old_rules[i];
    RuleEvent e =
        MakeEvent(*old.rule, RuleEvent::State::kResolved, last_step_.value_or(old.since_step),
                  last_step_ ? last_time_ : kNaN, old.value);
    e.message =
        "resolved: the rule was removed or changed by a reload (" + old.rule->expr.text() + ")";
    out->push_back(std::move(e));
  }
}

std::vector<RunRuleEvaluator::RuleStatus> RunRuleEvaluator::Statuses() const {
  std::vector<RuleStatus> out;
  out.reserve(rules_.size());
  for (const Bound& b : rules_)
    out.push_back(RuleStatus{b.rule, b.state, b.since_step, b.since_time, b.value});
  return out;
}

}  // namespace trainwatch::rules

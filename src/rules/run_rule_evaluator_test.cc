// Rule evaluation as scenarios: a rule file and records in, events out.
#include "rules/run_rule_evaluator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "rules/rule_file.h"

namespace trainwatch::rules {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::shared_ptr<const RuleSet> Rules(const std::string& yaml) {
  Result<RuleSet> r = ParseRules(yaml, "test.yml");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return std::make_shared<const RuleSet>(r.ok() ? std::move(r).value() : RuleSet());
}

// One group "g" holding `rules` (YAML list items, indented by 6).
std::string Group(const std::string& rules) { return "groups:\n  - name: g\n    rules:\n" + rules; }

class Scenario {
 public:
  explicit Scenario(const std::string& yaml, std::string project = "p")
      : evaluator_("run1", std::move(project), Rules(yaml)) {}

  // One record per line: "STEP TIME name=value ...", TIME "-" for none; values as strtod reads them
  // ("nan", "inf").
  void Feed(const std::string& records) {
    std::istringstream lines(records);
    std::string line;
    while (std::getline(lines, line)) {
      std::istringstream fields(line);
      std::string step, time, metric;
      if (!(fields >> step >> time)) continue;
      std::vector<std::pair<std::string, double>> owned;
      while (fields >> metric) {
        size_t eq = metric.find('=');
        owned.emplace_back(metric.substr(0, eq), std::strtod(metric.c_str() + eq + 1, nullptr));
      }
      std::vector<std::pair<std::string_view, double>> view(owned.begin(), owned.end());
      evaluator_.Observe(std::stoll(step), time == "-" ? std::nan("") : std::stod(time), view,
                         &events_);
    }
  }
  void Reload(const std::string& yaml) { evaluator_.Rebind(Rules(yaml), &events_); }

  // "firing A@3 v=0.6" per event.
  std::vector<std::string> Summary() const {
    std::vector<std::string> out;
    for (const RuleEvent& e : events_) {
      out.push_back(std::string(StateName(e.state)) + " " + e.rule + "@" + std::to_string(e.step) +
                    " v=" + FormatValue(e.value));
    }
    return out;
  }
  const std::vector<RuleEvent>& events() const { return events_; }
  RunRuleEvaluator& evaluator() { return evaluator_; }

 private:
  RunRuleEvaluator evaluator_;
  std::vector<RuleEvent> events_;
};

struct Case {
  const char* name;
  const char* rules;    // YAML list items of one group
  const char* records;  // Scenario::Feed format
  std::vector<std::string> events;
};

class ScenarioTest : public ::testing::TestWithParam<Case> {};

TEST_P(ScenarioTest, Events) {
  Scenario s(Group(GetParam().rules));
  s.Feed(GetParam().records);
  EXPECT_EQ(GetParam().events, s.Summary());
}

INSTANTIATE_TEST_SUITE_P(
    Rules, ScenarioTest,
    ::testing::Values(
        Case{"ThresholdFiresAtOnceAndResolves",
             "      - {alert: A, expr: loss > 0.5}\n",
             "1 0 loss=0.4\n2 10 loss=0.6\n3 20 loss=0.7\n4 30 loss=0.3\n5 40 loss=0.9\n",
             {"firing A@2 v=0.6", "resolved A@4 v=0.3", "firing A@5 v=0.9"}},
        Case{"HoldInRecordTime",
             "      - {alert: A, expr: loss > 0.5, for: 1m}\n",
             "1 0 loss=0.6\n2 20 loss=0.6\n3 40 loss=0.7\n4 60 loss=0.8\n5 80 loss=0.9\n6 100 "
             "loss=0.2\n",
             {"pending A@1 v=0.6", "firing A@4 v=0.8", "resolved A@6 v=0.2"}},
        Case{"HoldInSteps",
             "      - {alert: A, expr: loss > 0.5, for: 10 steps}\n",
             "0 - loss=0.6\n4 - loss=0.6\n8 - loss=0.6\n12 - loss=0.6\n16 - loss=0.6\n",
             {"pending A@0 v=0.6", "firing A@12 v=0.6"}},
        Case{"PendingCancelledResolvesWithoutFiring",
             "      - {alert: A, expr: loss > 0.5, for: 1m}\n",
             "1 0 loss=0.6\n2 30 loss=0.6\n3 40 loss=0.4\n4 50 loss=0.6\n5 100 loss=0.6\n6 110 "
             "loss=0.6\n",
             {"pending A@1 v=0.6", "resolved A@3 v=0.4", "pending A@4 v=0.6", "firing A@6 v=0.6"}},
        Case{"TimeHoldStartsAtTheFirstTimedRecord",
             "      - {alert: A, expr: loss > 0.5, for: 1m}\n",
             "1 - loss=0.6\n2 - loss=0.6\n3 100 loss=0.6\n4 150 loss=0.6\n5 160 loss=0.6\n",
             {"pending A@1 v=0.6", "firing A@5 v=0.6"}},
        Case{"ValidationVersusTrainingAtDifferentCadences",
             "      - {alert: ValWorse, expr: val_loss > 1.5 * train_loss}\n",
             "1 0 train_loss=1.0\n2 1 train_loss=0.9\n3 2 train_loss=0.8\n4 3 train_loss=0.7 "
             "val_loss=1.0\n"
             "5 4 train_loss=0.6\n6 5 train_loss=0.7\n7 6 train_loss=0.6\n8 7 val_loss=0.8\n9 8 "
             "val_loss=0.95\n",
             {"firing ValWorse@5 v=1", "resolved ValWorse@6 v=1", "firing ValWorse@7 v=1",
              "resolved ValWorse@8 v=0.8", "firing ValWorse@9 v=0.95"}},
        Case{"NaNComparisonsAreFalseAndIsNanCatchesThem",
             "      - {alert: High, expr: loss > 0.5}\n      - {alert: NaN, expr: isnan(loss)}\n",
             "1 0 loss=0.6\n2 1 loss=nan\n3 2 loss=0.4\n4 3 loss=inf\n",
             {"firing High@1 v=0.6", "resolved High@2 v=NaN", "firing NaN@2 v=NaN",
              "resolved NaN@3 v=0.4", "firing High@4 v=+Inf"}},
        Case{"WindowedMean",
             "      - {alert: A, expr: 'mean(loss, 3) > 1'}\n",
             "1 0 loss=1\n2 1 loss=1\n3 2 loss=1\n4 3 loss=4\n5 4 loss=1\n6 5 loss=1\n7 6 loss=1\n",
             {"firing A@4 v=2", "resolved A@7 v=1"}},
        Case{"WindowLargerThanTheData",
             "      - {alert: A, expr: 'max(loss, 1000) > 5 and min(loss, 1000) < 1'}\n",
             "1 0 loss=2\n2 1 loss=6\n3 2 loss=0.5\n",
             {"firing A@3 v=6"}},
        Case{"DeltaNeedsNPlusOneValues",
             "      - {alert: Rising, expr: 'delta(loss, 2) > 0.5'}\n",
             "1 0 loss=5\n2 1 loss=1\n3 2 loss=1\n4 3 loss=1.2\n5 4 loss=1.7\n6 5 loss=1.6\n7 6 "
             "loss=1.6\n",
             {"firing Rising@5 v=0.7", "resolved Rising@6 v=0.4"}},
        Case{"EvaluatedOnlyOnceEveryMetricWasSeen",
             "      - {alert: Both, expr: a > 1 and b > 1}\n",
             "1 0 a=2\n2 1 c=5\n3 2 b=2\n4 3 c=0\n5 4 a=0\n",
             {"firing Both@3 v=2", "resolved Both@5 v=0"}},
        Case{"RecordsWithoutTheMetricDoNotEvaluate",
             "      - {alert: A, expr: loss > 1, for: 2 steps}\n",
             "1 0 loss=2\n2 1 other=1\n3 2 other=1\n4 3 other=1\n5 4 loss=2\n",
             {"pending A@1 v=2", "firing A@5 v=2"}},
        Case{"ResumeDropsPendingHolds",
             "      - {alert: A, expr: loss > 1, for: 2 steps}\n",
             "5 0 loss=2\n6 1 loss=2\n3 2 loss=2\n4 3 loss=2\n5 4 loss=2\n",
             {"pending A@5 v=2", "resolved A@3 v=2", "pending A@3 v=2", "firing A@5 v=2"}},
        Case{"ResumeClearsWindows",
             "      - {alert: A, expr: 'sum(x, 3) > 25'}\n",
             "1 0 x=10\n2 1 x=10\n1 2 x=10\n2 3 x=10\n3 4 x=10\n",
             {"firing A@3 v=30"}},
        Case{"ResumeKeepsFiring",
             "      - {alert: A, expr: loss > 1}\n",
             "5 0 loss=2\n3 1 loss=2\n4 2 loss=0\n",
             {"firing A@5 v=2", "resolved A@4 v=0"}},
        Case{"BackticksAndSlashNames",
             "      - {alert: A, expr: '`val/acc@1` < 0.5 and train/loss / val/loss > 2'}\n",
             "1 0 val/acc@1=0.4 train/loss=3 val/loss=1\n2 1 train/loss=1\n",
             {"firing A@1 v=0.4", "resolved A@2 v=0.4"}},
        Case{"EventsInRuleOrder",
             "      - {alert: First, expr: b > 0}\n      - {alert: Second, expr: a > 0}\n",
             "1 0 a=1 b=1\n",
             {"firing First@1 v=1", "firing Second@1 v=1"}}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(RunRuleEvaluatorTest, EventFields) {
  Scenario s(Group(R"(      - alert: HighLoss
        expr: loss > 0.5
        labels: {severity: critical, team: vision}
        annotations:
          summary: "loss is {{ $value }} at step {{ $step }} in {{ $run }}"
          owner: "{{ $labels.team }} / {{ $labels.severity }} / {{ $metric }} / {{ $project }} / {{ $alert }}"
      - alert: Plain
        expr: loss * 2 > 1
)"),
             "vision-a");
  s.Feed("7 1000.5 loss=0.75\n8 1001 loss=0.25\n");
  ASSERT_EQ(4u, s.events().size());
  const RuleEvent& e = s.events()[0];
  EXPECT_EQ("HighLoss", e.rule);
  EXPECT_EQ("g", e.group);
  EXPECT_EQ("run1", e.run);
  EXPECT_EQ(RuleEvent::State::kFiring, e.state);
  EXPECT_EQ(7, e.step);
  EXPECT_EQ(1000.5, e.time);
  EXPECT_EQ(0.75, e.value);
  EXPECT_EQ("loss", e.metric);
  EXPECT_EQ("critical", e.severity);
  EXPECT_EQ((std::map<std::string, std::string>{{"severity", "critical"}, {"team", "vision"}}),
            e.labels);
  EXPECT_EQ("loss is 0.75 at step 7 in run1", e.annotations.at("summary"));
  EXPECT_EQ("vision / critical / loss / vision-a / HighLoss", e.annotations.at("owner"));
  EXPECT_EQ("loss is 0.75 at step 7 in run1", e.message);
  const RuleEvent& plain = s.events()[1];
  EXPECT_EQ("warning", plain.severity);
  EXPECT_EQ("loss * 2 > 1 (value 1.5 at step 7)", plain.message);
  EXPECT_EQ("resolved: loss is 0.25 at step 8 in run1", s.events()[2].message);
  EXPECT_EQ("resolved: loss * 2 > 1 (value 0.5 at step 8)", s.events()[3].message);
}

TEST(RunRuleEvaluatorTest, GroupProjectFilters) {
  const std::string yaml = R"(groups:
  - name: vision
    projects: ["vision-*", special]
    rules:
      - {alert: V, expr: loss > 1}
  - name: all
    rules:
      - {alert: All, expr: loss > 1}
)";
  for (const auto& [project, expected] : std::vector<std::pair<std::string, size_t>>{
           {"vision-a", 2}, {"special", 2}, {"nlp", 1}, {"special-2", 1}}) {
    Scenario s(yaml, project);
    EXPECT_EQ(expected, s.evaluator().rule_count()) << project;
    s.Feed("1 0 loss=2\n");
    EXPECT_EQ(expected, s.events().size()) << project;
  }
}

TEST(RunRuleEvaluatorTest, NoRulesIsCheap) {
  Scenario s("");
  s.Feed("1 0 loss=2\n");
  EXPECT_THAT(s.events(), IsEmpty());
  EXPECT_EQ(0u, s.evaluator().rule_count());
}

const char* kBefore = R"(groups:
  - name: g
    rules:
      - {alert: Pending, expr: loss > 1, for: 3 steps}
      - {alert: Firing, expr: loss > 1}
      - {alert: Removed, expr: loss > 1}
      - {alert: Changed, expr: loss > 1}
      - {alert: Relabelled, expr: loss > 1, labels: {team: a}}
)";
const char* kAfter = R"(groups:
  - name: g
    rules:
      - {alert: Added, expr: loss > 1}
      - {alert: Pending, expr: 'loss>1', for: 3 steps}
      - {alert: Firing, expr: (loss > 1)}
      - {alert: Changed, expr: loss > 1.5}
      - {alert: Relabelled, expr: loss > 1, labels: {team: b}}
)";

TEST(RunRuleEvaluatorTest, RebindKeepsStateOfUnchangedRulesAndResolvesRemovedOnes) {
  Scenario s(kBefore);
  s.Feed("1 10 loss=2\n2 20 loss=2\n");
  EXPECT_THAT(s.Summary(), ElementsAre("pending Pending@1 v=2", "firing Firing@1 v=2", "firing Removed@1 v=2",
                                       "firing Changed@1 v=2", "firing Relabelled@1 v=2"));
  s.Reload(kAfter);
  EXPECT_THAT(s.Summary(), ElementsAre("pending Pending@1 v=2", "firing Firing@1 v=2", "firing Removed@1 v=2",
                                       "firing Changed@1 v=2", "firing Relabelled@1 v=2",
                                       "resolved Removed@2 v=2", "resolved Changed@2 v=2"));
  EXPECT_EQ(20, s.events()[5].time);
  EXPECT_EQ("resolved: the rule was removed or changed by a reload (loss > 1)",
            s.events()[5].message);
  // Pending keeps its hold (since step 1: fires at 4, not 6); Firing and Relabelled stay firing.
  s.Feed("3 30 loss=2\n4 40 loss=2\n5 50 loss=0\n");
  const std::vector<std::string> all = s.Summary();
  EXPECT_THAT(std::vector<std::string>(all.begin() + 7, all.end()),
              ElementsAre("firing Added@3 v=2", "firing Changed@3 v=2", "firing Pending@4 v=2",
                          "resolved Added@5 v=0", "resolved Pending@5 v=0", "resolved Firing@5 v=0",
                          "resolved Changed@5 v=0", "resolved Relabelled@5 v=0"));
  EXPECT_EQ("b", s.events().back().labels.at("team"));  // the new labels
}

TEST(RunRuleEvaluatorTest, RebindKeepsWindows) {
  const char* before =
      "groups:\n  - name: g\n    rules:\n      - {alert: A, expr: 'mean(x, 3) > 100'}\n";
  const char* after =
      "groups:\n  - name: g\n    rules:\n      - {alert: B, expr: 'mean(x, 3) > 5 and sum(x, 10) > "
      "0'}\n";
  Scenario s(before);
  s.Feed("1 0 x=9\n2 1 x=9\n3 2 x=9\n");
  s.Reload(after);
  s.Feed("4 3 x=0\n");  // mean(9, 9, 0) = 6 thanks to the kept values
  EXPECT_THAT(s.Summary(), ElementsAre("firing B@4 v=6"));
}

TEST(RunRuleEvaluatorTest, StatusesReportState) {
  Scenario s(kBefore);
  s.Feed("1 10 loss=2\n");
  std::vector<RunRuleEvaluator::RuleStatus> st = s.evaluator().Statuses();
  ASSERT_EQ(5u, st.size());
  EXPECT_EQ("Pending", st[0].rule->alert);
  EXPECT_EQ(RunRuleEvaluator::RuleState::kPending, st[0].state);
  EXPECT_EQ(1, st[0].since_step);
  EXPECT_EQ(10, st[0].since_time);
  EXPECT_EQ(RunRuleEvaluator::RuleState::kFiring, st[1].state);
  EXPECT_EQ(2, st[1].value);
}

TEST(RunRuleEvaluatorTest, ManyRecordsStayFast) {
  Scenario s(
      Group("      - {alert: A, expr: 'mean(loss, 1000) > 0.6 and max(loss, 100000) > 0', for: 50 "
            "steps}\n"
            "      - {alert: B, expr: 'delta(loss, 10) > 0.4'}\n"));
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<std::pair<std::string_view, double>> record(1);
  std::vector<RuleEvent> events;
  for (int64_t step = 0; step < 200000; ++step) {
    record[0] = {"loss", u(rng)};
    s.evaluator().Observe(step, static_cast<double>(step), record, &events);
  }
  EXPECT_FALSE(events.empty());
}

}  // namespace
}  // namespace trainwatch::rules

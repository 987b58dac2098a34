// Rule files: the documented example, detector parameter precedence, group filters, and every
// error naming its line (and, for expressions, the column).
#include "rules/rule_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/testing/temp_dir.h"
#include "rules/rule_event.h"

namespace trainwatch::rules {
namespace {

using detect::AlertKind;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr const char* kExample = R"(# the example of docs/rules.md
detectors:
  bindings: {loss: ["loss", "train/loss"], layer_grad_norm_prefix: "gn/"}
  grad_explosion: {expl_ratio: 10, expl_persist: 3}
  stalled: {stall_floor: 60s, stall_mult: 10}
  plateau: {enabled: false}
  nan: {nan_include_eval: true}
projects:
  nlp-*:
    detectors:
      loss_spike: {spike_ratio: 4}
      stalled: {stall_floor: 2m}
  nlp-prod:
    detectors:
      loss_spike: {spike_ratio: 6}
      plateau: {enabled: true}
  "*-prod":
    detectors:
      loss_spike: {spike_ratio: 5, spike_k: 7}
groups:
  - name: thresholds
    projects: ["vision-*"]
    rules:
      - alert: HighLoss
        expr: loss > 0.5
        for: 10m
        labels: {severity: critical, team: vision}
        annotations: {summary: "loss is {{ $value }} at step {{ $step }} in {{ $run }}"}
      - alert: ValWorseThanTrain
        expr: val_loss > 1.5 * train_loss
        for: 200 steps
  - name: everyone
    rules:
      - alert: GradNormHigh
        expr: mean(grad_norm, 100) > 10 and max(grad_norm, 100) > 50
      - alert: LossSpikeCritical
        detector: loss_spike
        params: {spike_ratio: 8}
        labels: {severity: critical}
        annotations: {summary: "spike on {{ $metric }}"}
      - alert: Stalled
        detector: stalled
receivers: {anything: [goes, here]}
routes: [whatever]
)";

RuleSet MustParse(const std::string& text) {
  Result<RuleSet> r = ParseRules(text, "alerts.yml");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : RuleSet();
}

TEST(RuleFileTest, ParsesTheExample) {
  RuleSet rules = MustParse(kExample);
  EXPECT_EQ(5u, rules.rule_count());
  ASSERT_EQ(2u, rules.groups().size());
  const Group& g = rules.groups()[0];
  EXPECT_EQ("thresholds", g.name);
  EXPECT_THAT(g.projects, ElementsAre("vision-*"));
  ASSERT_EQ(2u, g.rules.size());
  const Rule& high = g.rules[0];
  EXPECT_EQ("HighLoss", high.alert);
  EXPECT_EQ("thresholds", high.group);
  EXPECT_EQ("loss > 0.5", high.expr.text());
  EXPECT_EQ(Hold::Unit::kSeconds, high.hold.unit);
  EXPECT_EQ(600, high.hold.seconds);
  EXPECT_EQ("critical", high.severity);
  EXPECT_EQ((std::map<std::string, std::string>{{"severity", "critical"}, {"team", "vision"}}),
            high.labels);
  EXPECT_EQ(24, high.line);
  EXPECT_EQ(200, g.rules[1].hold.steps);
  EXPECT_EQ("warning", g.rules[1].severity);  // the default
  EXPECT_EQ("warning", g.rules[1].labels.at("severity"));
  const DetectorRule& spike = rules.groups()[1].detector_rules[0];
  EXPECT_EQ(AlertKind::kLossSpike, spike.kind);
  EXPECT_EQ("critical", spike.severity);
  EXPECT_EQ("critical", rules.groups()[1].detector_rules[1].severity);  // stalled's default
}

TEST(RuleFileTest, DetectorParametersMergeGlobalThenGlobsThenExactThenRule) {
  RuleSet rules = MustParse(kExample);
  const detect::DetectorOptions defaults;

  detect::DetectorOptions other = rules.DetectorOptionsFor("other");
  EXPECT_EQ(60, other.stall_floor);  // detectors:
  EXPECT_EQ(10, other.expl_ratio);
  EXPECT_TRUE(other.nan_include_eval);
  EXPECT_EQ("gn/", other.bindings.layer_grad_norm_prefix);
  EXPECT_THAT(other.bindings.loss, ElementsAre("loss", "train/loss"));
  EXPECT_EQ(defaults.bindings.lr, other.bindings.lr);
  EXPECT_EQ(8, other.spike_ratio);  // the LossSpikeCritical rule applies to every project
  EXPECT_EQ(defaults.spike_k, other.spike_k);

  detect::DetectorOptions nlp = rules.DetectorOptionsFor("nlp-dev");
  EXPECT_EQ(120, nlp.stall_floor);  // the nlp-* glob
  EXPECT_EQ(8, nlp.spike_ratio);    // the rule's params still win for its own kind

  detect::DetectorOptions prod = rules.DetectorOptionsFor("nlp-prod");
  EXPECT_EQ(120, prod.stall_floor);
  EXPECT_EQ(7, prod.spike_k);  // *-prod glob (exact entry does not set it)
  EXPECT_EQ(8, prod.spike_ratio);

  EXPECT_FALSE(rules.KindEnabled("other", AlertKind::kPlateau));
  EXPECT_FALSE(rules.KindEnabled("nlp-dev", AlertKind::kPlateau));
  EXPECT_TRUE(rules.KindEnabled("nlp-prod", AlertKind::kPlateau));  // exact beats global
  EXPECT_TRUE(rules.KindEnabled("other", AlertKind::kLossSpike));
}

TEST(RuleFileTest, ExactProjectBeatsGlobsInAnyFileOrder) {
  RuleSet rules = MustParse(R"(
projects:
  team-a:
    detectors: {loss_spike: {spike_ratio: 9}}
  team-*:
    detectors: {loss_spike: {spike_ratio: 4, spike_k: 2}}
  "*":
    detectors: {loss_spike: {spike_k: 3}}
)");
  detect::DetectorOptions a = rules.DetectorOptionsFor("team-a");
  EXPECT_EQ(9, a.spike_ratio);
  EXPECT_EQ(3, a.spike_k);  // globs apply in file order: "*" after "team-*"
  EXPECT_EQ(4, rules.DetectorOptionsFor("team-b").spike_ratio);
  EXPECT_EQ(3, rules.DetectorOptionsFor("x").spike_k);
  EXPECT_EQ(detect::DetectorOptions{}.spike_ratio, rules.DetectorOptionsFor("x").spike_ratio);
}

TEST(RuleFileTest, SensitivityPerProjectScalesTheThresholds) {
  RuleSet rules = MustParse(R"(
detectors:
  sensitivity: low
projects:
  vision-*:
    sensitivity: high
  nlp:
    sensitivity: 1.2
)");
  EXPECT_DOUBLE_EQ(1.5, rules.DetectorOptionsFor("other").sensitivity);
  EXPECT_DOUBLE_EQ(0.7, rules.DetectorOptionsFor("vision-a").sensitivity);
  EXPECT_DOUBLE_EQ(1.2, rules.DetectorOptionsFor("nlp").sensitivity);
  EXPECT_DOUBLE_EQ(1.0, MustParse("").DetectorOptionsFor("p").sensitivity);
}

TEST(RuleFileTest, GroupProjectFilters) {
  RuleSet rules = MustParse(kExample);
  auto names = [&](const std::string& project) {
    std::vector<std::string> out;
    for (const Rule* r : rules.RulesFor(project)) out.push_back(r->alert);
    return out;
  };
  EXPECT_THAT(names("vision-resnet"), ElementsAre("HighLoss", "ValWorseThanTrain", "GradNormHigh"));
  EXPECT_THAT(names("nlp-bert"), ElementsAre("GradNormHigh"));
  ASSERT_NE(nullptr, rules.DetectorRuleFor("nlp-bert", AlertKind::kLossSpike));
  EXPECT_EQ("LossSpikeCritical", rules.DetectorRuleFor("nlp-bert", AlertKind::kLossSpike)->alert);
  EXPECT_EQ(nullptr, rules.DetectorRuleFor("nlp-bert", AlertKind::kGradExplosion));
}

TEST(RuleFileTest, FirstDetectorRuleWins) {
  RuleSet rules = MustParse(R"(
groups:
  - name: a
    projects: [special]
    rules:
      - {alert: SpecialSpike, detector: loss_spike, labels: {team: x}}
  - name: b
    rules:
      - {alert: AnySpike, detector: loss_spike}
)");
  EXPECT_EQ("SpecialSpike", rules.DetectorRuleFor("special", AlertKind::kLossSpike)->alert);
  EXPECT_EQ("AnySpike", rules.DetectorRuleFor("other", AlertKind::kLossSpike)->alert);
  EXPECT_EQ("warning", rules.DetectorRuleFor("other", AlertKind::kLossSpike)->severity);
}

TEST(RuleFileTest, DecoratesBuiltInAlerts) {
  RuleSet rules = MustParse(kExample);
  detect::Alert alert{.state = detect::AlertState::kFiring,
                      .run = "r",
                      .kind = "loss_spike",
                      .metric = "train/loss",
                      .step = 12,
                      .time = 5,
                      .value = 4.5,
                      .severity = "warning",
                      .message = "loss jumped"};
  RuleEvent e = EventFromAlert(alert, rules.DetectorRuleFor("p", AlertKind::kLossSpike), "p");
  EXPECT_EQ("LossSpikeCritical", e.rule);
  EXPECT_EQ("everyone", e.group);
  EXPECT_EQ("critical", e.severity);
  EXPECT_EQ(RuleEvent::State::kFiring, e.state);
  EXPECT_EQ("spike on train/loss", e.annotations.at("summary"));
  EXPECT_EQ("spike on train/loss", e.message);
  EXPECT_EQ(12, e.step);
  alert.state = detect::AlertState::kResolved;
  e = EventFromAlert(alert, rules.DetectorRuleFor("p", AlertKind::kLossSpike), "p");
  EXPECT_EQ(RuleEvent::State::kResolved, e.state);
  EXPECT_EQ("resolved: spike on train/loss", e.message);
  RuleEvent plain = EventFromAlert(alert, nullptr, "p");
  EXPECT_EQ("loss_spike", plain.rule);
  EXPECT_EQ("warning", plain.severity);
  EXPECT_EQ("loss jumped", plain.message);
  EXPECT_EQ("warning", plain.labels.at("severity"));
}

TEST(RuleFileTest, ActionTravelsAsALabel) {
  RuleSet rules = MustParse(R"(
groups:
  - name: g
    rules:
      - {alert: Diverged, detector: divergence, action: stop}
      - {alert: Spike, detector: loss_spike, action: notify_only}
      - {alert: High, expr: loss > 9, action: stop}
      - {alert: Low, expr: loss < 0}
)");
  EXPECT_EQ("stop", rules.DetectorRuleFor("p", AlertKind::kDivergence)->labels.at("action"));
  EXPECT_EQ("notify_only", rules.DetectorRuleFor("p", AlertKind::kLossSpike)->labels.at("action"));
  std::vector<const Rule*> expr_rules = rules.RulesFor("p");
  ASSERT_EQ(2u, expr_rules.size());
  EXPECT_EQ("stop", expr_rules[0]->labels.at("action"));
  EXPECT_FALSE(expr_rules[1]->labels.contains("action"));  // absent: notify_only
}

TEST(RuleFileTest, EmptyFileGivesDefaults) {
  for (const char* text : {"", "# nothing\n", "---\n"}) {
    RuleSet rules = MustParse(text);
    EXPECT_EQ(0u, rules.rule_count());
    EXPECT_EQ(detect::DetectorOptions().spike_ratio, rules.DetectorOptionsFor("p").spike_ratio);
    EXPECT_TRUE(rules.KindEnabled("p", AlertKind::kPlateau));
    EXPECT_TRUE(rules.RulesFor("p").empty());
  }
}

TEST(RuleFileTest, EveryParameterIsSettable) {
  // One value inside every parameter's range: 1 (0.5 where 1 is out of range), true, 1m.
  auto value_of = [](const ParamSpec& p) -> double {
    if (p.type == ParamType::kFlag) return 1;
    if (p.type == ParamType::kSeconds) return 60;
    return p.max_open && p.max <= 1 ? 0.5 : 1;
  };
  std::map<std::string, std::string> sections;
  for (const ParamSpec& p : ParamSpecs()) {
    std::string value = p.type == ParamType::kFlag      ? "true"
                        : p.type == ParamType::kSeconds ? "1m"
                        : value_of(p) == 0.5            ? "0.5"
                                                        : "1";
    sections[std::string(p.section)] += std::string(p.name) + ": " + value + ", ";
  }
  std::string text = "detectors:\n";
  for (const auto& [section, params] : sections) text += "  " + section + ": {" + params + "}\n";
  RuleSet rules = MustParse(text);
  detect::DetectorOptions o = rules.DetectorOptionsFor("p");
  for (const ParamSpec& p : ParamSpecs()) {
    if (p.flag != nullptr) {
      EXPECT_TRUE(o.*p.flag) << p.name;
    } else if (p.count != nullptr) {
      EXPECT_EQ(1, o.*p.count) << p.name;
    } else {
      EXPECT_EQ(value_of(p), o.*p.real) << p.name;
    }
  }
  EXPECT_GE(ParamSpecs().size(), 45u);
}

TEST(RuleFileTest, ToJsonListsTheFile) {
  RuleSet rules = MustParse(kExample);
  nlohmann::json j = rules.ToJson();
  EXPECT_EQ("alerts.yml", j["file"]);
  EXPECT_EQ(5, j["rule_count"]);
  EXPECT_EQ(60.0, j["detectors"]["stalled"]["stall_floor"]);
  EXPECT_EQ(false, j["detectors"]["plateau"]["enabled"]);
  EXPECT_EQ(3, j["detectors"]["grad_explosion"]["expl_persist"]);
  EXPECT_EQ("nlp-*", j["projects"][0]["pattern"]);
  EXPECT_EQ("loss > 0.5", j["groups"][0]["rules"][0]["expr"]);
  EXPECT_EQ("600s", j["groups"][0]["rules"][0]["for"]);
  EXPECT_EQ("loss_spike", j["groups"][1]["rules"][1]["detector"]);
  EXPECT_EQ(8.0, j["groups"][1]["rules"][1]["params"]["spike_ratio"]);
}

TEST(RuleFileTest, LoadRules) {
  test::TempDir dir;
  const std::string path = dir.Join("alerts.yml");
  ASSERT_TRUE(WriteFileAtomic(PosixFileSystem(), path, kExample).ok());
  Result<RuleSet> rules = LoadRules(path);
  ASSERT_TRUE(rules.ok()) << rules.status().ToString();
  EXPECT_EQ(5u, rules->rule_count());
  EXPECT_EQ(path, rules->file_name());
  Result<RuleSet> empty = LoadRules("");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(0u, empty->rule_count());
  Result<RuleSet> missing = LoadRules(dir.Join("nope.yml"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(StatusCode::kNotFound, missing.status().code());
  ASSERT_TRUE(WriteFileAtomic(PosixFileSystem(), path,
                              "groups:\n  - name: g\n    rules:\n      - {alert: A, expr: x >}\n")
                  .ok());
  EXPECT_EQ(path + ":4: expr: column 4: expected a number or a metric name after '>'",
            LoadRules(path).status().message());
}

struct ErrorCase {
  const char* yaml;
  const char* message;
};

class RuleFileErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(RuleFileErrorTest, NamesTheLine) {
  Result<RuleSet> r = ParseRules(GetParam().yaml, "alerts.yml");
  ASSERT_FALSE(r.ok()) << GetParam().yaml;
  EXPECT_EQ(StatusCode::kInvalidArgument, r.status().code());
  EXPECT_EQ(GetParam().message, r.status().message());
}

// Rules in a group, starting at line 4.
#define GROUP "groups:\n  - name: g\n    rules:\n"

INSTANTIATE_TEST_SUITE_P(
    Errors, RuleFileErrorTest,
    ::testing::Values(
        ErrorCase{"a: [1, 2", "alerts.yml:1: bad YAML: end of sequence flow not found"},
        ErrorCase{"- 1\n- 2\n",
                  "alerts.yml:1: expected a mapping with detectors, projects, groups"},
        ErrorCase{"detectors: {}\nrule: 1\n",
                  "alerts.yml:2: unknown top-level key 'rule' (known: detectors, projects, groups, "
                  "receivers, routes, reports)"},
        ErrorCase{"groups: []\ngroups: []\n", "alerts.yml:2: 'groups' appears twice"},
        // Found by fuzzing (fuzz/alerting_file): yaml-cpp keeps bytes that are not UTF-8 (and
        // makes some of a NUL), and GET /api/v1/rules then threw from nlohmann::json::dump.
        ErrorCase{GROUP "      - {alert: A, expr: x > 1, annotations: {summary: \"caf\xE9\"}}\n",
                  "alerts.yml:4: not valid UTF-8 (byte 90)"},
        ErrorCase{"detectors: {}\n# \x01\n", "alerts.yml:2: control character 1 (byte 16)"},
        // Detector parameters.
        ErrorCase{"detectors:\n  loss_spkie: {spike_ratio: 3}\n",
                  "alerts.yml:2: detectors: unknown detector 'loss_spkie' (known: common, lr, nan, "
                  "grad_explosion, "
                  "grad_vanishing, loss_spike, loss_oscillation, divergence, plateau, overfitting, "
                  "stalled, "
                  "throughput_drop, straggler, rank_desync, rank_dead, collective_hang)"},
        ErrorCase{"detectors:\n  loss_spike:\n    spike_ration: 3\n",
                  "alerts.yml:3: detectors: unknown parameter 'spike_ration' for 'loss_spike' (its "
                  "parameters: "
                  "enabled, spike_ratio, spike_k, spike_min_records)"},
        ErrorCase{"detectors:\n  loss_spike:\n    expl_ratio: 3\n",
                  "alerts.yml:3: detectors: parameter 'expl_ratio' belongs to 'grad_explosion', "
                  "not 'loss_spike'"},
        ErrorCase{"detectors:\n  loss_spike:\n    spike_ratio: -1\n",
                  "alerts.yml:3: detectors: loss_spike.spike_ratio: must be > 0, got '-1'"},
        ErrorCase{"detectors:\n  loss_spike:\n    spike_min_records: 2.5\n",
                  "alerts.yml:3: detectors: loss_spike.spike_min_records: expected a whole number, "
                  "got '2.5'"},
        ErrorCase{"projects:\n  p:\n    sensitivity: paranoid\n",
                  "alerts.yml:3: projects.p.sensitivity: expected low, default, high or a number "
                  "in [0.25, 4], "
                  "got 'paranoid'"},
        ErrorCase{"detectors:\n  common:\n    a_slow: 2\n",
                  "alerts.yml:3: detectors: common.a_slow: must be in (0, 1], got '2'"},
        ErrorCase{"detectors:\n  common: {enabled: false}\n",
                  "alerts.yml:2: detectors: 'enabled' applies to a detector kind, not to 'common'"},
        ErrorCase{"detectors:\n  plateau: {enabled: maybe}\n",
                  "alerts.yml:2: detectors: plateau.enabled: expected true or false, got 'maybe'"},
        ErrorCase{"detectors:\n  stalled: {stall_floor: 5 minutes}\n",
                  "alerts.yml:2: detectors: stalled.stall_floor: bad duration '5 minutes' (every "
                  "number needs a "
                  "unit: ms, s, m, h, d, w)"},
        ErrorCase{
            "detectors:\n  stalled: {stall_floor: [1]}\n",
            "alerts.yml:2: detectors.stalled.stall_floor: expected a single value, got a list"},
        ErrorCase{"detectors:\n  plateau: 3\n",
                  "alerts.yml:2: detectors.plateau: expected a mapping, got '3'"},
        ErrorCase{"detectors:\n  bindings:\n    los: [a]\n",
                  "alerts.yml:3: detectors: unknown binding 'los' (known: loss, grad_norm, lr, "
                  "update_ratio, "
                  "eval_loss, eval_prefixes, time_to_collective, replicated, loss_fallback_suffix, "
                  "layer_grad_norm_prefix)"},
        ErrorCase{"detectors:\n  bindings:\n    loss_fallback_suffix: [a, b]\n",
                  "alerts.yml:3: detectors: bindings.loss_fallback_suffix: expected one string"},
        ErrorCase{
            "projects:\n  nlp-*:\n    detector: {}\n",
            "alerts.yml:3: projects.nlp-*: unknown key 'detector' (known: detectors, sensitivity)"},
        ErrorCase{"projects:\n  nlp-*:\n    detectors:\n      loss_spike: {nope: 1}\n",
                  "alerts.yml:4: projects.nlp-*.detectors: unknown parameter 'nope' for "
                  "'loss_spike' (its "
                  "parameters: enabled, spike_ratio, spike_k, spike_min_records)"},
        // Groups.
        ErrorCase{"groups: {a: 1}\n",
                  "alerts.yml:1: groups: expected a list of groups, got a mapping"},
        ErrorCase{"groups:\n  - rules: []\n", "alerts.yml:2: group: 'name' is required"},
        ErrorCase{"groups:\n  - name: g\n  - name: g\n", "alerts.yml:3: group 'g' appears twice"},
        ErrorCase{"groups:\n  - name: g\n    interval: 1m\n",
                  "alerts.yml:3: group 'g': unknown key 'interval' (known: name, projects, rules)"},
        ErrorCase{"groups:\n  - name: g\n    projects: [{a: 1}]\n",
                  "alerts.yml:3: group 'g': projects: expected a string, got a mapping"},
        // Rules.
        ErrorCase{GROUP "      - expr: loss > 1\n",
                  "alerts.yml:4: group 'g': every rule needs 'alert: <name>'"},
        ErrorCase{GROUP "      - alert: A\n",
                  "alerts.yml:4: alert 'A': give exactly one of 'expr' (a condition) and "
                  "'detector' (a built-in kind)"},
        ErrorCase{GROUP "      - alert: A\n        expr: loss > 1\n        detector: nan\n",
                  "alerts.yml:4: alert 'A': give exactly one of 'expr' (a condition) and "
                  "'detector' (a built-in kind)"},
        ErrorCase{GROUP "      - alert: A\n        expr: loss > 1\n        labels: {}\n        "
                        "severity: page\n",
                  "alerts.yml:7: group 'g': unknown rule key 'severity' (known: alert, expr, "
                  "detector, for, params, "
                  "labels, annotations, action)"},
        ErrorCase{GROUP "      - {alert: A, detector: nan, action: halt}\n",
                  "alerts.yml:4: alert 'A': action: expected stop or notify_only, got 'halt'"},
        ErrorCase{GROUP "      - {alert: A, expr: x > 1, labels: {action: stop}}\n",
                  "alerts.yml:4: alert 'A': labels: 'action' is set by the rule's 'action:' key"},
        ErrorCase{GROUP "      - alert: A\n        expr: loss >\n",
                  "alerts.yml:5: expr: column 7: expected a number or a metric name after '>'"},
        ErrorCase{GROUP "      - alert: A\n\n        expr: 'mean(loss, 0) > 1'\n",
                  "alerts.yml:6: expr: column 12: the window of mean() must be a whole number of "
                  "records from 1 "
                  "to 100000, got 0"},
        ErrorCase{GROUP "      - alert: A\n        expr: [loss]\n",
                  "alerts.yml:5: alert 'A': expr: expected a single value, got a list"},
        ErrorCase{GROUP "      - alert: A\n        expr: loss > 1\n        for: 10\n",
                  "alerts.yml:6: alert 'A': for: bad hold '10': give a unit, e.g. '10m' (record "
                  "time) or '200 steps'"},
        ErrorCase{GROUP
                  "      - alert: A\n        expr: loss > 1\n        labels: {severity: page}\n",
                  "alerts.yml:6: alert 'A': labels.severity: expected info, warning or critical, "
                  "got 'page'"},
        ErrorCase{GROUP "      - alert: A\n        expr: loss > 1\n        labels: {9x: a}\n",
                  "alerts.yml:6: alert 'A': labels: bad label name '9x' (letters, digits and _, "
                  "not starting with a "
                  "digit)"},
        ErrorCase{GROUP "      - alert: A\n        expr: loss > 1\n        annotations:\n          "
                        "summary: '{{ $vlaue }}'\n",
                  "alerts.yml:7: alert 'A': annotations.summary: unknown template variable '{{ "
                  "$vlaue }}' (known: "
                  "$value, $step, $run, $project, $alert, $metric, $labels.<name>)"},
        ErrorCase{GROUP "      - alert: A\n        expr: loss > 1\n        annotations: {summary: "
                        "'{{ $labels.team }}'}\n",
                  "alerts.yml:6: alert 'A': annotations.summary: label 'team' is not among the "
                  "rule's labels"},
        ErrorCase{GROUP
                  "      - alert: A\n        expr: loss > 1\n        params: {spike_ratio: 3}\n",
                  "alerts.yml:6: alert 'A': 'params' applies to detector rules only"},
        ErrorCase{
            GROUP "      - alert: A\n        detector: loss_spikes\n",
            "alerts.yml:5: alert 'A': unknown detector 'loss_spikes' (known: nan, grad_explosion, "
            "grad_vanishing, loss_spike, loss_oscillation, divergence, plateau, overfitting, "
            "stalled, "
            "throughput_drop, straggler, rank_desync, rank_dead, collective_hang)"},
        ErrorCase{GROUP "      - alert: A\n        detector: loss_spike\n        for: 5m\n",
                  "alerts.yml:6: alert 'A': 'for' applies to expression rules only"},
        ErrorCase{GROUP "      - alert: A\n        detector: loss_spike\n        params:\n         "
                        " expl_ratio: 3\n",
                  "alerts.yml:7: alert 'A': params: parameter 'expl_ratio' belongs to "
                  "'grad_explosion', not "
                  "'loss_spike'"},
        ErrorCase{
            GROUP
            "      - alert: A\n        detector: loss_spike\n        params: {enabled: false}\n",
            "alerts.yml:6: alert 'A': params: 'enabled' cannot be set by a rule; use "
            "detectors.loss_spike.enabled"},
        ErrorCase{GROUP "      - {alert: A, detector: nan}\n      - {alert: B, detector: nan}\n",
                  "alerts.yml:5: alert 'B': detector 'nan' is already decorated by alert 'A' in "
                  "this group"},
        ErrorCase{GROUP "      - {alert: A, expr: x > 1, labels: {a: 1, a: 2}}\n",
                  "alerts.yml:4: alert 'A': labels: 'a' appears twice"}));

}  // namespace
}  // namespace trainwatch::rules

#include "alerting/run_monitor.h"

#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "rules/rule_file.h"

namespace trainwatch::alerting {
namespace {

TEST(RunMonitorTest, AlertEventToJsonWritesEveryField) {
  AlertEvent e;
  e.kind = "nan";
  e.name = "nan";
  e.metric = "loss";
  e.severity = "critical";
  e.message = "x";
  e.step = 7;
  e.time = 1.5;
  e.value = NAN;
  EXPECT_EQ(AlertEventToJson("r\"1", e),
            "{\"run\":\"r\\\"1\",\"kind\":\"nan\",\"metric\":\"loss\",\"step\":7,\"time\":1.5,\"value\":null,"
            "\"severity\":\"critical\",\"message\":\"x\",\"name\":\"nan\"}");
  e.type = AlertEvent::Type::kResolved;
  e.labels = {{"team", "a"}};
  EXPECT_THAT(AlertEventToJson("r", e), testing::EndsWith(",\"labels\":{\"team\":\"a\"},\"state\":\"resolved\"}"));
}

// Feeds `steps` finite records then one NaN; returns the kinds of the events.
std::vector<std::string> FeedNan(const std::string& project, std::shared_ptr<const rules::RuleSet> rules) {
  RunMonitor monitor(project, "r", std::move(rules));
  std::vector<AlertEvent> events;
  for (int64_t s = 0; s <= 60; ++s) {
    std::pair<std::string_view, double> m[] = {{"loss", s == 60 ? NAN : 1.0 + 0.01 * static_cast<double>(s % 3)}};
    monitor.Observe(s, 1.8e9 + static_cast<double>(s), m, &events);
  }
  std::vector<std::string> kinds;
  for (const AlertEvent& e : events) kinds.push_back(e.kind + "/" + e.name);
  return kinds;
}

TEST(RunMonitorTest, RuleFileDisablesAKindPerProjectAndNamesRuleAlerts) {
  auto parsed = rules::ParseRules(R"(projects:
  quiet:
    detectors:
      nan: {enabled: false}
groups:
  - name: g
    rules:
      - {alert: LossIsNan, expr: isnan(loss)}
)", "t.yml");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  auto rules = std::make_shared<const rules::RuleSet>(std::move(*parsed));
  EXPECT_THAT(FeedNan("loud", rules), testing::ElementsAre("nan/nan", "rule/LossIsNan"));
  EXPECT_THAT(FeedNan("quiet", rules), testing::ElementsAre("rule/LossIsNan"));
}

}  // namespace
}  // namespace trainwatch::alerting

// The alerting file (`trainwatch serve --alerting FILE`, docs/rules.md and docs/notifications.md):
// YAML with rules, detector settings, receivers and routes, read through LoadAlertingFile from an
// in-memory file system. That covers the rule file parser (src/rules/rule_file.cc: expressions,
// durations, templates, detector parameters, project overrides) and the notifier configuration
// (src/notify/notify_config.cc).
//
// A file that loads is then used as the server uses it: listed (GET /api/v1/rules: the JSON must
// serialise), asked for each project's detector options and rules, run over a few records for
// project "p" (templates expanded), and its receivers built.
//
// Checks, besides memory safety and no exception escaping: an error names the file; every route
// names a configured receiver, and receiver names are unique.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "alerting/alerting_file.h"
#include "common/clock.h"
#include "fuzz/fuzz_support.h"
#include "rules/run_rule_evaluator.h"

namespace {

using namespace trainwatch;

constexpr const char* kPath = "/etc/trainwatch/alerting.yml";

void Use(const alerting::AlertingFile& file) {
  const rules::RuleSet& rules = *file.rules;
  (void)rules.ToJson().dump();
  for (const char* project : {"p", "vision-1", ""}) {
    (void)rules.DetectorOptionsFor(project);
    (void)rules.RulesFor(project);
  }

  // Every metric any rule of project "p" reads, then a few records that move them around.
  std::set<std::string> names;
  for (const rules::Rule* rule : rules.RulesFor("p")) {
    for (const std::string& m : rule->expr.metrics()) names.insert(m);
  }
  if (!names.empty()) {
    rules::RunRuleEvaluator evaluator("r", "p", file.rules);
    std::vector<rules::RuleEvent> events;
    const double values[] = {1, 1e9, -1, std::numeric_limits<double>::quiet_NaN(), 0, 0};
    int64_t step = 0;
    for (double v : values) {
      std::vector<std::pair<std::string_view, double>> record;
      for (const std::string& m : names) record.emplace_back(m, v);
      evaluator.Observe(step, 1767225600.0 + step * 60, record, &events);
      step += 100;
    }
    evaluator.Rebind(file.rules, &events);
  }

  std::set<std::string> receivers;
  ManualClock clock;
  for (const notify::ReceiverConfig& receiver : file.notify.receivers) {
    FUZZ_CHECK(receivers.insert(receiver.name).second, "receiver twice: " + receiver.name);
    FUZZ_CHECK(notify::BuildNotifier(receiver, clock) != nullptr, "no notifier for " + receiver.name);
  }
  for (const notify::Route& route : file.notify.routes) {
    FUZZ_CHECK(receivers.count(route.receiver), "route to an unknown receiver: " + route.receiver);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::ClearTrainwatchEnvironment();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::MemFileSystem fs;
  fs.Put(kPath, std::string_view(reinterpret_cast<const char*>(data), size));
  auto loaded = alerting::LoadAlertingFile(fs, kPath);
  if (!loaded.ok()) {
    FUZZ_CHECK(loaded.status().message().starts_with(kPath), loaded.status().message());
    return 0;
  }
  Use(*loaded);
  return 0;
}

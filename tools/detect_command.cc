#include "detect_command.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <string_view>
#include <utility>

#include "alerting/run_monitor.h"
#include "common/file_system.h"
#include "ingest/json_scanner.h"
#include "rules/rule_file.h"

namespace trainwatch::tools {
namespace {

constexpr const char* kDetectUsage =
    "usage: trainwatch detect [--rules FILE] [--resolved] FILE.jsonl...\n"
    "Runs the server's anomaly detectors (docs/detectors.md) and alert rules (docs/rules.md) over\n"
    "records in the /write JSON-lines format, {\"project\":..,\"run\":..,\"step\":..,\"time\":..,\n"
    "\"metrics\":{..}} (NaN, Infinity and -Infinity allowed), each run in file order, and prints one\n"
    "JSON alert per line: {\"run\",\"kind\",\"metric\",\"step\",\"time\",\"value\",\"severity\",\"message\",\n"
    "\"name\"} (kind \"rule\" and name the rule's alert for rule alerts). `stalled` uses the gaps between\n"
    "record times.\n"
    "  --rules FILE  the alerting file the server uses (detector settings and rules; receivers ignored)\n"
    "  --resolved    also print when an incident clears (the same fields plus \"state\":\"resolved\")\n";

// One record of a detect input line; metric names are owned here.
struct DetectRecord {
  std::string project = "default";
  std::string run;
  int64_t step = 0;
  double time = NAN;
  std::vector<std::pair<std::string, double>> metrics;
};

// Parses one line; returns false with *error set. Unknown fields are skipped, non-numeric metric
// values ignored.
bool ParseDetectRecord(std::string_view text, DetectRecord* record, std::string* error) {
  trainwatch::ingest::JsonScanner scanner(text);
  auto fail = [&](const std::string& why) {
    *error = why.empty() ? scanner.error() : why;
    return false;
  };
  if (!scanner.ExpectChar('{')) return fail("");
  std::string key;
  bool done = false;
  bool has_step = false;
  for (bool first = true;; first = false) {
    if (!scanner.NextKey(&key, &done, first)) return fail("");
    if (done) break;
    double v;
    bool is_int;
    int64_t i;
    std::string_view raw;
    if (key == "run" && scanner.PeekKind() == '"') {
      if (!scanner.ReadString(&record->run)) return fail("");
    } else if (key == "project" && scanner.PeekKind() == '"') {
      if (!scanner.ReadString(&record->project)) return fail("");
    } else if (key == "step" && scanner.PeekKind() == 'n') {
      if (!scanner.ReadNumber(&v, &is_int, &i)) return fail("");
      if (!is_int) return fail("field 'step': expected an integer");
      record->step = i;
      has_step = true;
    } else if (key == "time" && scanner.PeekKind() == 'n') {
      if (!scanner.ReadNumber(&record->time, &is_int, &i)) return fail("");
    } else if (key == "metrics" && scanner.PeekKind() == '{') {
      if (!scanner.ExpectChar('{')) return fail("");
      std::string name;
      bool metrics_done = false;
      for (bool first_metric = true;; first_metric = false) {
        if (!scanner.NextKey(&name, &metrics_done, first_metric)) return fail("");
        if (metrics_done) break;
        if (scanner.PeekKind() != 'n') {
          if (!scanner.SkipValue(&raw)) return fail("");
          continue;
        }
        if (!scanner.ReadNumber(&v, &is_int, &i)) return fail("metric '" + name + "': " + scanner.error());
        record->metrics.emplace_back(std::move(name), v);
      }
    } else if (!scanner.SkipValue(&raw)) {
      return fail("");
    }
  }
  if (record->run.empty()) return fail("missing field 'run'");
  if (!has_step) return fail("missing field 'step'");
  return true;
}

}  // namespace

int DetectCommand(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  std::string rules_path;
  bool show_resolved = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kDetectUsage, stdout);
      return 0;
    }
    if (a == "--resolved") {
      show_resolved = true;
    } else if (a == "--rules" && i + 1 < args.size()) {
      rules_path = args[++i];
    } else if (a.starts_with("--")) {
      std::fprintf(stderr, "trainwatch detect: unknown flag %s\n%s", a.c_str(), kDetectUsage);
      return 2;
    } else {
      files.push_back(a);
    }
  }
  if (files.empty()) {
    std::fputs(kDetectUsage, stderr);
    return 2;
  }
  auto rule_set = rules::LoadRules(rules_path);
  if (!rule_set.ok()) {
    std::fprintf(stderr, "trainwatch detect: %s\n", rule_set.status().message().c_str());
    return 2;
  }
  auto rules = std::make_shared<const rules::RuleSet>(std::move(*rule_set));
  std::map<std::string, std::unique_ptr<alerting::RunMonitor>, std::less<>> runs;
  std::vector<alerting::AlertEvent> events;
  std::vector<std::pair<std::string_view, double>> metrics;
  int bad_lines = 0;
  for (const std::string& path : files) {
    std::ifstream in(path);
    if (!in) {
      std::fprintf(stderr, "trainwatch detect: cannot open %s\n", path.c_str());
      return 1;
    }
    std::string line;
    for (int64_t line_no = 1; std::getline(in, line); ++line_no) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      DetectRecord record;
      std::string error;
      if (!ParseDetectRecord(line, &record, &error)) {
        std::fprintf(stderr, "trainwatch detect: %s:%lld: %s\n", path.c_str(), static_cast<long long>(line_no),
                     error.c_str());
        ++bad_lines;
        continue;
      }
      const std::string key = record.project + '\x1f' + record.run;
      auto it = runs.find(key);
      if (it == runs.end()) {
        it = runs.emplace(key, std::make_unique<alerting::RunMonitor>(record.project, record.run, rules)).first;
      }
      metrics.clear();
      for (const auto& [name, value] : record.metrics) metrics.emplace_back(name, value);
      events.clear();
      it->second->Observe(record.step, record.time, metrics, &events);
      for (const alerting::AlertEvent& e : events) {
        if (e.type == alerting::AlertEvent::Type::kResolved && !show_resolved) continue;
        std::printf("%s\n", alerting::AlertEventToJson(record.run, e).c_str());
      }
    }
  }
  return bad_lines == 0 ? 0 : 1;
}

}  // namespace trainwatch::tools

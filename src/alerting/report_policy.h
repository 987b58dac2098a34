// ReportPolicy: which runs get a report stored automatically when they end (docs/reports.md,
// "Automatic reports"), from the `reports:` section of the alerting file:
//
//   reports:
//     - projects: ["vision-*"]        # globs (* and ?); absent = every project
//       statuses: [finished, crashed] # the end states that get one; absent = both
//
// A run gets a report when at least one entry matches its project and the status it ended with.
// Without the section, no run gets one.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace YAML {
class Node;
}

namespace trainwatch::alerting {

struct ReportPolicy {
  struct Entry {
    std::vector<std::string> projects;  // globs; empty: every project
    std::vector<std::string> statuses;  // "finished", "crashed"
    int line = 0;                       // 1-based line in the file (0 when built in code)
  };
  std::vector<Entry> entries;

  // True when a run of `project` that ended with `status` gets a report.
  bool Wants(const std::string& project, const std::string& status) const;
  bool empty() const { return entries.empty(); }
};

// The `reports` section of `root` (absent or null: an empty policy). InvalidArgument
// "<file>:<line>: reports[<i>]: <reason>" for an unknown key, a value of the wrong type or an
// unknown status.
Result<ReportPolicy> ParseReportPolicy(const YAML::Node& root, const std::string& file);

}  // namespace trainwatch::alerting

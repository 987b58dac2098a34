// The alerting file (`trainwatch serve --alerting FILE`): one YAML document holding the rules and
// detector settings (docs/rules.md), the receivers and routes (docs/notifications.md) and which
// runs get a report when they end (docs/reports.md, "Automatic reports").
#pragma once

#include <memory>
#include <string>

#include "alerting/report_policy.h"
#include "common/file_system.h"
#include "common/status.h"
#include "notify/notify_config.h"
#include "rules/rule_set.h"

namespace trainwatch::alerting {

struct AlertingFile {
  std::shared_ptr<const rules::RuleSet> rules;
  notify::NotifyConfig notify;
  ReportPolicy reports;
};

// Reads and validates the whole file; InvalidArgument "<file>:<line>: <reason>" (or the
// notifier's "<file> line <n>: ...") for the first problem. An empty path gives the defaults: the
// built-in detectors and no receivers.
Result<AlertingFile> LoadAlertingFile(FileSystem& fs, const std::string& path);

}  // namespace trainwatch::alerting

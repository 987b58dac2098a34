// Reading an alerting rule file (format: docs/rules.md). yaml-cpp is confined to rule_file.cc:
// its exceptions are caught there and become Status errors.
#pragma once

#include <string>
#include <string_view>

#include "common/file_system.h"
#include "common/status.h"
#include "rules/rule_set.h"

namespace trainwatch::rules {

// Parses and validates a whole rule file. `file_name` only labels errors. Empty text (or only
// comments) gives the default RuleSet. The top-level keys `receivers` and `routes` belong to the
// notifier and are skipped; any other unknown key is an error.
// Errors: InvalidArgument "<file_name>:<line>: <reason>", e.g.
//   "alerts.yml:12: expr: column 8: expected a number or a metric name after '>'".
Result<RuleSet> ParseRules(std::string_view yaml_text, const std::string& file_name);

// Reads `path` through `fs` and parses it. An empty `path` (no rule file configured) gives the
// default RuleSet; a path that does not exist is NotFound (a mistyped path must not silently drop
// every rule).
Result<RuleSet> LoadRules(FileSystem& fs, const std::string& path);
// The same through PosixFileSystem().
Result<RuleSet> LoadRules(const std::string& path);

}  // namespace trainwatch::rules

// The rules of a rule file: expression rules (`expr:`), decorations of built-in detectors
// (`detector:`) and the groups that hold them. Plain value types, immutable once a RuleSet owns
// them (RuleSet hands out pointers to them).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "detect/alert.h"
#include "rules/detector_params.h"
#include "rules/duration.h"
#include "rules/expr.h"
#include "rules/template.h"

namespace trainwatch::rules {

// True for "info", "warning" and "critical".
bool IsSeverity(std::string_view severity);

// An alert on an expression over the run's metrics (`alert:` + `expr:`).
struct Rule {
  std::string group;
  std::string alert;
  Expr expr;
  Hold hold;                                  // `for:`
  std::string severity = "warning";           // also labels["severity"]
  std::map<std::string, std::string> labels;  // always holds "severity"
  std::map<std::string, Template> annotations;
  int line = 0;  // of the rule in its file, from 1

  // group, alert, the canonical expression and the hold: a reloaded rule with the same
  // fingerprint keeps its pending/firing state (labels and annotations may change).
  std::string Fingerprint() const;
};

// Labels, annotations and parameters for one built-in detector kind (`alert:` + `detector:`).
struct DetectorRule {
  std::string group;
  std::string alert;
  detect::AlertKind kind = detect::AlertKind::kNan;
  DetectorSettings params;                    // only this kind's own parameters
  std::string severity;                       // default detect::DefaultSeverity(kind)
  std::map<std::string, std::string> labels;  // always holds "severity"
  std::map<std::string, Template> annotations;
  int line = 0;
};

struct Group {
  std::string name;
  std::vector<std::string> projects;  // globs (glob.h); empty: every project
  std::vector<Rule> rules;
  std::vector<DetectorRule> detector_rules;
  int line = 0;

  bool AppliesTo(std::string_view project) const;
};

}  // namespace trainwatch::rules

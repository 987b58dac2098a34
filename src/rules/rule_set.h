// RuleSet: one parsed rule file (ParseRules / LoadRules in rule_file.h). Answers, per project,
// the built-in detectors' options and switches, the decorations of their alerts and the
// expression rules to evaluate.
//
// Precedence of detector parameters, lowest first: the built-in defaults, the `detectors:`
// section, every `projects:` glob entry that matches (in file order), the `projects:` entry that
// names the project exactly, and last the `params:` of the `detector:` rule that decorates the
// kind (for that kind's own parameters only). `enabled:` follows the same chain (rules cannot set
// it).
//
// Immutable after construction: share it as std::shared_ptr<const RuleSet>; every method is
// const and thread-safe. Pointers it returns live as long as the RuleSet.
#pragma once

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "detect/alert.h"
#include "detect/options.h"
#include "rules/detector_params.h"
#include "rules/rule.h"

namespace trainwatch::rules {

// One `projects:` entry.
struct ProjectOverride {
  std::string pattern;  // a project name or a glob
  DetectorSettings settings;
  int line = 0;
};

class RuleSet {
 public:
  // Defaults everywhere and no rules (what an empty or absent rule file means).
  RuleSet() = default;
  RuleSet(std::string file_name, DetectorSettings defaults, std::vector<ProjectOverride> projects,
          std::vector<Group> groups);
  RuleSet(RuleSet&&) = default;
  RuleSet& operator=(RuleSet&&) = default;
  RuleSet(const RuleSet&) = delete;  // callers hold pointers into it; share it instead
  RuleSet& operator=(const RuleSet&) = delete;

  // The options for a RunDetector of a run in `project`.
  detect::DetectorOptions DetectorOptionsFor(const std::string& project) const;
  // False if `enabled: false` applies to `kind` in `project` (the caller drops those alerts).
  bool KindEnabled(const std::string& project, detect::AlertKind kind) const;
  // The first `detector:` rule (in file order) for `kind` among the groups that apply to
  // `project`, or nullptr.
  const DetectorRule* DetectorRuleFor(const std::string& project, detect::AlertKind kind) const;
  // The expression rules of every group that applies to `project`, in file order.
  std::vector<const Rule*> RulesFor(const std::string& project) const;

  // Expression rules plus detector rules, over all groups.
  size_t rule_count() const;
  const std::vector<Group>& groups() const { return groups_; }
  const std::string& file_name() const { return file_name_; }
  const DetectorSettings& defaults() const { return defaults_; }
  const std::vector<ProjectOverride>& projects() const { return projects_; }

  // The file's content for GET /api/v1/rules: {"file", "rule_count", "detectors": overrides,
  // "projects": [{"pattern", "detectors"}], "groups": [{"name", "projects", "rules": [...]}]}
  // (docs/rules.md, "Listing"). Defined in rule_set_json.cc.
  nlohmann::json ToJson() const;

 private:
  // The settings that apply to `project`, lowest precedence first.
  std::vector<const DetectorSettings*> ScopesFor(const std::string& project) const;

  std::string file_name_;
  DetectorSettings defaults_;
  std::vector<ProjectOverride> projects_;
  std::vector<Group> groups_;
};

}  // namespace trainwatch::rules

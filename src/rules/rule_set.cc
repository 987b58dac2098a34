#include "rules/rule_set.h"

#include "common/glob.h"

namespace trainwatch::rules {

RuleSet::RuleSet(std::string file_name, DetectorSettings defaults,
                 std::vector<ProjectOverride> projects, std::vector<Group> groups)
    : file_name_(std::move(file_name)),
      defaults_(std::move(defaults)),
      projects_(std::move(projects)),
      groups_(std::move(groups)) {}

std::vector<const DetectorSettings*> RuleSet::ScopesFor(const std::string& project) const {
  std::vector<const DetectorSettings*> scopes{&defaults_};
  for (const ProjectOverride& p : projects_) {
    if (IsGlob(p.pattern) && GlobMatch(p.pattern, project)) scopes.push_back(&p.settings);
  }
  for (const ProjectOverride& p : projects_) {
    if (!IsGlob(p.pattern) && p.pattern == project) scopes.push_back(&p.settings);
  }
  return scopes;
}

detect::DetectorOptions RuleSet::DetectorOptionsFor(const std::string& project) const {
  detect::DetectorOptions options;
  for (const DetectorSettings* s : ScopesFor(project)) s->ApplyTo(&options);
  for (int k = 0; k < detect::kAlertKindCount; ++k) {
    if (const DetectorRule* rule = DetectorRuleFor(project, static_cast<detect::AlertKind>(k))) {
      rule->params.ApplyTo(&options);
    }
  }
  return options;
}

bool RuleSet::KindEnabled(const std::string& project, detect::AlertKind kind) const {
  bool enabled = true;
  for (const DetectorSettings* s : ScopesFor(project)) {
    if (std::optional<bool> e = s->enabled(kind)) enabled = *e;
  }
  return enabled;
}

const DetectorRule* RuleSet::DetectorRuleFor(const std::string& project,
                                             detect::AlertKind kind) const {
  for (const Group& g : groups_) {
    if (!g.AppliesTo(project)) continue;
    for (const DetectorRule& r : g.detector_rules) {
      if (r.kind == kind) return &r;
    }
  }
  return nullptr;
}

std::vector<const Rule*> RuleSet::RulesFor(const std::string& project) const {
  std::vector<const Rule*> out;
  for (const Group& g : groups_) {
    if (!g.AppliesTo(project)) continue;
    for (const Rule& r : g.rules) out.push_back(&r);
  }
  return out;
}

size_t RuleSet::rule_count() const {
  size_t n = 0;
  for (const Group& g : groups_) n += g.rules.size() + g.detector_rules.size();
  return n;
}

}  // namespace trainwatch::rules

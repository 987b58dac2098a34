// RuleSet::ToJson: the rule file as the API lists it.
#include <nlohmann/json.hpp>

#include "rules/rule_set.h"

namespace trainwatch::rules {
namespace {

nlohmann::json SettingsJson(const DetectorSettings& settings) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [spec, v] : settings.params()) {
    nlohmann::json& section = out[std::string(spec->section)];
    if (spec->flag != nullptr)
      section[std::string(spec->name)] = v != 0;
    else if (spec->count != nullptr)
      section[std::string(spec->name)] = static_cast<int64_t>(v);
    else
      section[std::string(spec->name)] = v;
  }
  for (int k = 0; k < detect::kAlertKindCount; ++k) {
    auto kind = static_cast<detect::AlertKind>(k);
    if (std::optional<bool> e = settings.enabled(kind))
      out[std::string(detect::KindName(kind))]["enabled"] = *e;
  }
  for (const auto& [field, names] : settings.bindings()) out["bindings"][field] = names;
  return out;
}

nlohmann::json AnnotationsJson(const std::map<std::string, Template>& annotations) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, t] : annotations) out[name] = t.text();
  return out;
}

}  // namespace

nlohmann::json RuleSet::ToJson() const {
  nlohmann::json projects = nlohmann::json::array();
  for (const ProjectOverride& p : projects_) {
    projects.push_back({{"pattern", p.pattern}, {"detectors", SettingsJson(p.settings)}});
  }
  nlohmann::json groups = nlohmann::json::array();
  for (const Group& g : groups_) {
    nlohmann::json rules = nlohmann::json::array();
    for (const Rule& r : g.rules) {
      rules.push_back({{"alert", r.alert},
                       {"expr", r.expr.text()},
                       {"for", r.hold.ToString()},
                       {"severity", r.severity},
                       {"labels", r.labels},
                       {"annotations", AnnotationsJson(r.annotations)},
                       {"line", r.line}});
    }
    for (const DetectorRule& r : g.detector_rules) {
      nlohmann::json params = SettingsJson(r.params);
      auto section = params.find(std::string(detect::KindName(r.kind)));
      rules.push_back({{"alert", r.alert},
                       {"detector", std::string(detect::KindName(r.kind))},
                       {"params", section == params.end() ? nlohmann::json::object() : *section},
                       {"severity", r.severity},
                       {"labels", r.labels},
                       {"annotations", AnnotationsJson(r.annotations)},
                       {"line", r.line}});
    }
    groups.push_back({{"name", g.name}, {"projects", g.projects}, {"rules", std::move(rules)}});
  }
  return {{"file", file_name_},
          {"rule_count", rule_count()},
          {"detectors", SettingsJson(defaults_)},
          {"projects", std::move(projects)},
          {"groups", std::move(groups)}};
}

}  // namespace trainwatch::rules

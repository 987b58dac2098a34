#include "rules/rule.h"

#include "common/glob.h"

namespace trainwatch::rules {

bool IsSeverity(std::string_view severity) {
  return severity == "info" || severity == "warning" || severity == "critical";
}

std::string Rule::Fingerprint() const {
  std::string out = group;
  out += '\0';
  out += alert;
  out += '\0';
  out += expr.Canonical();
  out += '\0';
  out += hold.ToString();
  return out;
}

bool Group::AppliesTo(std::string_view project) const {
  if (projects.empty()) return true;
  for (const std::string& pattern : projects) {
    if (GlobMatch(pattern, project)) return true;
  }
  return false;
}

}  // namespace trainwatch::rules

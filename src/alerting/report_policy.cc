#include "alerting/report_policy.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>

#include "common/glob.h"

namespace trainwatch::alerting {
namespace {

Status Error(const std::string& file, const YAML::Node& node, const std::string& where,
             const std::string& reason) {
  return Status::InvalidArgument(file + ":" + std::to_string(node.Mark().line + 1) + ": " + where +
                                 ": " + reason);
}

// A list of strings (a single string counts as a list of one).
Result<std::vector<std::string>> Strings(const std::string& file, const YAML::Node& node,
                                         const std::string& where) {
  std::vector<std::string> out;
  if (node.IsScalar()) {
    out.push_back(node.Scalar());
    return out;
  }
  if (!node.IsSequence()) return Error(file, node, where, "expected a list of strings");
  for (const YAML::Node& item : node) {
    if (!item.IsScalar()) return Error(file, item, where, "expected a list of strings");
    out.push_back(item.Scalar());
  }
  return out;
}

}  // namespace

bool ReportPolicy::Wants(const std::string& project, const std::string& status) const {
  for (const Entry& e : entries) {
    if (std::find(e.statuses.begin(), e.statuses.end(), status) == e.statuses.end()) continue;
    if (e.projects.empty()) return true;
    for (const std::string& glob : e.projects) {
      if (GlobMatch(glob, project)) return true;
    }
  }
  return false;
}

Result<ReportPolicy> ParseReportPolicy(const YAML::Node& root, const std::string& file) {
  ReportPolicy policy;
  if (!root.IsMap()) return policy;
  const YAML::Node section = root["reports"];
  if (!section.IsDefined() || section.IsNull()) return policy;
  if (!section.IsSequence()) {
    return Error(file, section, "reports", "expected a list of {projects, statuses}");
  }
  for (size_t i = 0; i < section.size(); ++i) {
    const YAML::Node node = section[i];
    const std::string where = "reports[" + std::to_string(i) + "]";
    if (!node.IsMap()) return Error(file, node, where, "expected a mapping");
    ReportPolicy::Entry entry;
    entry.line = node.Mark().line + 1;
    entry.statuses = {"finished", "crashed"};
    for (const auto& kv : node) {
      const std::string key = kv.first.Scalar();
      if (key == "projects") {
        TW_ASSIGN_OR_RETURN(entry.projects, Strings(file, kv.second, where + ".projects"));
      } else if (key == "statuses") {
        TW_ASSIGN_OR_RETURN(entry.statuses, Strings(file, kv.second, where + ".statuses"));
        for (const std::string& s : entry.statuses) {
          if (s != "finished" && s != "crashed") {
            return Error(file, kv.second, where + ".statuses",
                         "unknown status '" + s + "' (finished or crashed)");
          }
        }
        if (entry.statuses.empty()) {
          return Error(file, kv.second, where + ".statuses", "list at least one status");
        }
      } else {
        return Error(file, kv.first, where,
                     "unknown key '" + key + "' (known: projects, statuses)");
      }
    }
    policy.entries.push_back(std::move(entry));
  }
  return policy;
}

}  // namespace trainwatch::alerting

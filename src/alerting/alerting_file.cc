#include "alerting/alerting_file.h"

#include <yaml-cpp/yaml.h>

#include "rules/rule_file.h"

namespace trainwatch::alerting {

Result<AlertingFile> LoadAlertingFile(FileSystem& fs, const std::string& path) {
  AlertingFile out;
  if (path.empty()) {
    out.rules = std::make_shared<const rules::RuleSet>();
    return out;
  }
  TW_ASSIGN_OR_RETURN(std::string text, fs.ReadFile(path));
  TW_ASSIGN_OR_RETURN(rules::RuleSet rule_set, rules::ParseRules(text, path));
  out.rules = std::make_shared<const rules::RuleSet>(std::move(rule_set));
  YAML::Node root;
  try {
    root = YAML::Load(text);  // valid YAML: ParseRules accepted it
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(path + ": " + e.what());
  }
  TW_ASSIGN_OR_RETURN(out.notify, notify::ParseNotifyConfig(root, path));
  try {
    TW_ASSIGN_OR_RETURN(out.reports, ParseReportPolicy(root, path));
  } catch (const YAML::Exception& e) {  // the parse edge: yaml-cpp reports by throwing
    return Status::InvalidArgument(path + ": " + e.what());
  }
  return out;
}

}  // namespace trainwatch::alerting

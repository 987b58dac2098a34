#include "rules/rule_file.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <set>

#include "common/utf8.h"
#include "rules/detector_params.h"
#include "rules/duration.h"
#include "rules/expr.h"
#include "rules/template.h"

namespace trainwatch::rules {
namespace {

int LineOf(const YAML::Node& node) { return node.Mark().line < 0 ? 0 : node.Mark().line + 1; }

bool IsLabelName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

std::string NodeKind(const YAML::Node& node) {
  if (node.IsMap()) return "a mapping";
  if (node.IsSequence()) return "a list";
  if (node.IsNull()) return "nothing";
  return "'" + node.Scalar() + "'";
}

// Walks one rule file's YAML tree. Every error names the file and the line of the node at fault.
class FileParser {
 public:
  explicit FileParser(std::string file) : file_(std::move(file)) {}

  Result<RuleSet> Run(const YAML::Node& root) {
    if (!root.IsDefined() || root.IsNull()) return RuleSet(file_, {}, {}, {});
    if (!root.IsMap()) return Error(root, "expected a mapping with detectors, projects, groups");
    DetectorSettings defaults;
    std::vector<ProjectOverride> projects;
    std::vector<Group> groups;
    TW_RETURN_IF_ERROR(ForEachEntry(
        root, "", [&](const std::string& key, const YAML::Node& k, const YAML::Node& v) {
          // The notifier's, and the automatic reports' (alerting/report_policy.h).
          if (key == "receivers" || key == "routes" || key == "reports") return Status::Ok();
          if (key == "detectors") return ParseDetectors(v, "detectors", &defaults);
          if (key == "projects") return ParseProjects(v, &projects);
          if (key == "groups") return ParseGroups(v, &groups);
          return Error(k, "unknown top-level key '" + key +
                              "' (known: detectors, projects, groups, receivers, routes, reports)");
        }));
    return RuleSet(file_, std::move(defaults), std::move(projects), std::move(groups));
  }

 private:
  using EntryFn = std::function<Status(const std::string& key, const YAML::Node& key_node,
                                       const YAML::Node& value)>;

  Status Error(const YAML::Node& node, const std::string& reason) const {
    return Status::InvalidArgument(file_ + ":" + std::to_string(LineOf(node)) + ": " + reason);
  }

  // Calls `fn` for every entry of the mapping `map`, in file order; rejects a non-mapping, a
  // non-scalar key and a repeated key. `where` prefixes the messages ("groups[0].labels").
  Status ForEachEntry(const YAML::Node& map, const std::string& where, const EntryFn& fn) const {
    if (map.IsNull()) return Status::Ok();
    if (!map.IsMap()) return Error(map, Prefix(where) + "expected a mapping, got " + NodeKind(map));
    std::set<std::string> seen;
    for (const auto& entry : map) {
      if (!entry.first.IsScalar())
        return Error(entry.first, Prefix(where) + "keys must be plain strings");
      const std::string& key = entry.first.Scalar();
      if (!seen.insert(key).second)
        return Error(entry.first, Prefix(where) + "'" + key + "' appears twice");
      TW_RETURN_IF_ERROR(fn(key, entry.first, entry.second));
    }
    return Status::Ok();
  }

  static std::string Prefix(const std::string& where) { return where.empty() ? "" : where + ": "; }

  Result<std::string> Scalar(const YAML::Node& node, const std::string& what) const {
    if (!node.IsScalar())
      return Error(node, what + ": expected a single value, got " + NodeKind(node));
    return node.Scalar();
  }

  // A list of strings, or one string standing for a list of one.
  Result<std::vector<std::string>> Strings(const YAML::Node& node, const std::string& what) const {
    std::vector<std::string> out;
    if (node.IsScalar()) {
      out.push_back(node.Scalar());
      return out;
    }
    if (!node.IsSequence())
      return Error(node, what + ": expected a list of strings, got " + NodeKind(node));
    for (const YAML::Node& item : node) {
      if (!item.IsScalar()) return Error(item, what + ": expected a string, got " + NodeKind(item));
      out.push_back(item.Scalar());
    }
    return out;
  }

  // `sensitivity: low | default | high` (or the number itself): common.sensitivity.
  Status ParseSensitivity(const YAML::Node& node, const std::string& where,
                          DetectorSettings* out) const {
    Result<std::string> text = Scalar(node, where);
    if (!text.ok()) return text.status();
    std::optional<double> scale = SensitivityScale(*text);
    std::string value = scale ? std::to_string(*scale) : *text;
    Status s = out->Set("common", "sensitivity", value);
    if (!s.ok()) {
      return Error(node, where + ": expected low, default, high or a number in [0.25, 4], got '" +
                             *text + "'");
    }
    return s;
  }

  // A `detectors:` mapping: `sensitivity:`, `bindings:` and one mapping of parameters per section.
  Status ParseDetectors(const YAML::Node& node, const std::string& where,
                        DetectorSettings* out) const {
    return ForEachEntry(
        node, where,
        [&](const std::string& section, const YAML::Node& key, const YAML::Node& body) {
          if (section == "sensitivity") return ParseSensitivity(body, where + ".sensitivity", out);
          if (section == "bindings") {
            return ForEachEntry(
                body, where + ".bindings",
                [&](const std::string& field, const YAML::Node& fk, const YAML::Node& v) {
                  Result<std::vector<std::string>> names = Strings(v, where + ".bindings." + field);
                  if (!names.ok()) return names.status();
                  Status s = out->SetBinding(field, std::move(*names));
                  return s.ok() ? s : Error(fk, where + ": " + s.message());
                });
          }
          if (!IsSection(section)) {
            Status s = DetectorSettings().Set(section, "enabled",
                                              "true");  // the "unknown detector" message
            return Error(key, where + ": " + s.message());
          }
          return ForEachEntry(
              body, where + "." + section,
              [&](const std::string& param, const YAML::Node& pk, const YAML::Node& v) {
                Result<std::string> text = Scalar(v, where + "." + section + "." + param);
                if (!text.ok()) return text.status();
                Status s = out->Set(section, param, *text);
                return s.ok() ? s : Error(v.IsNull() ? pk : v, where + ": " + s.message());
              });
        });
  }

  Status ParseProjects(const YAML::Node& node, std::vector<ProjectOverride>* out) const {
    return ForEachEntry(
        node, "projects",
        [&](const std::string& pattern, const YAML::Node& key, const YAML::Node& body) {
          if (pattern.empty()) return Error(key, "projects: empty project name");
          ProjectOverride project{pattern, {}, LineOf(key)};
          const std::string where = "projects." + pattern;
          TW_RETURN_IF_ERROR(ForEachEntry(
              body, where, [&](const std::string& k, const YAML::Node& kn, const YAML::Node& v) {
                if (k == "detectors")
                  return ParseDetectors(v, where + ".detectors", &project.settings);
                if (k == "sensitivity")
                  return ParseSensitivity(v, where + ".sensitivity", &project.settings);
                return Error(kn,
                             where + ": unknown key '" + k + "' (known: detectors, sensitivity)");
              }));
          out->push_back(std::move(project));
          return Status::Ok();
        });
  }

  Status ParseGroups(const YAML::Node& node, std::vector<Group>* out) const {
    if (node.IsNull()) return Status::Ok();
    if (!node.IsSequence())
      return Error(node, "groups: expected a list of groups, got " + NodeKind(node));
    std::set<std::string> names;
    for (const YAML::Node& item : node) {
      Group group;
      group.line = LineOf(item);
      TW_RETURN_IF_ERROR(ParseGroup(item, &group));
      if (!names.insert(group.name).second)
        return Error(item, "group '" + group.name + "' appears twice");
      out->push_back(std::move(group));
    }
    return Status::Ok();
  }

  Status ParseGroup(const YAML::Node& node, Group* group) const {
    if (!node.IsMap())
      return Error(node, "groups: expected a group (name, projects, rules), got " + NodeKind(node));
    const YAML::Node name = node["name"];
    if (!name.IsDefined() || !name.IsScalar() || name.Scalar().empty()) {
      return Error(node, "group: 'name' is required");
    }
    group->name = name.Scalar();
    const std::string where = "group '" + group->name + "'";
    std::optional<YAML::Node> rules;
    TW_RETURN_IF_ERROR(ForEachEntry(
        node, where, [&](const std::string& key, const YAML::Node& k, const YAML::Node& v) {
          if (key == "name") return Status::Ok();
          if (key == "projects") {
            Result<std::vector<std::string>> globs = Strings(v, where + ": projects");
            if (!globs.ok()) return globs.status();
            for (const std::string& g : *globs) {
              if (g.empty()) return Error(v, where + ": projects: empty project name");
            }
            group->projects = std::move(*globs);
            return Status::Ok();
          }
          if (key == "rules") {
            rules.emplace(v);
            return Status::Ok();
          }
          return Error(k, where + ": unknown key '" + key + "' (known: name, projects, rules)");
        }));
    if (!rules || rules->IsNull()) return Status::Ok();
    if (!rules->IsSequence())
      return Error(*rules, where + ": rules: expected a list of rules, got " + NodeKind(*rules));
    for (const YAML::Node& rule : *rules) TW_RETURN_IF_ERROR(ParseRule(rule, group));
    return Status::Ok();
  }

  // A rule's entries as written; absent ones empty.
  struct RuleFields {
    std::string alert;
    std::optional<YAML::Node> expr, detector, hold, params, labels, annotations, action;
  };

  Status ParseRule(const YAML::Node& node, Group* group) const {
    const std::string gwhere = "group '" + group->name + "'";
    if (!node.IsMap())
      return Error(
          node, gwhere + ": expected a rule (alert, expr or detector, ...), got " + NodeKind(node));
    RuleFields f;
    TW_RETURN_IF_ERROR(ForEachEntry(
        node, gwhere, [&](const std::string& key, const YAML::Node& k, const YAML::Node& v) {
          if (key == "alert") {
            if (!v.IsScalar() || v.Scalar().empty())
              return Error(v.IsNull() ? k : v, gwhere + ": alert: expected a name");
            f.alert = v.Scalar();
            if (f.alert.find('\n') != std::string::npos)
              return Error(v, gwhere + ": alert: the name must be one line");
          } else if (key == "expr") {
            f.expr = v;
          } else if (key == "detector") {
            f.detector = v;
          } else if (key == "for") {
            f.hold = v;
          } else if (key == "params") {
            f.params = v;
          } else if (key == "labels") {
            f.labels = v;
          } else if (key == "annotations") {
            f.annotations = v;
          } else if (key == "action") {
            f.action = v;
          } else {
            return Error(k, gwhere + ": unknown rule key '" + key +
                                "' (known: alert, expr, detector, for, params, labels, "
                                "annotations, action)");
          }
          return Status::Ok();
        }));
    if (f.alert.empty()) return Error(node, gwhere + ": every rule needs 'alert: <name>'");
    const std::string where = "alert '" + f.alert + "'";
    if (f.expr.has_value() == f.detector.has_value()) {
      return Error(
          node,
          where + ": give exactly one of 'expr' (a condition) and 'detector' (a built-in kind)");
    }
    std::map<std::string, std::string> labels;
    std::string severity;
    TW_RETURN_IF_ERROR(ParseLabels(f.labels.value_or(YAML::Node()), where, &labels, &severity));
    TW_RETURN_IF_ERROR(ParseAction(f, where, &labels));
    std::map<std::string, Template> annotations;
    TW_RETURN_IF_ERROR(
        ParseAnnotations(f.annotations.value_or(YAML::Node()), where, labels, &annotations));
    if (f.expr) {
      Rule rule;
      rule.group = group->name;
      rule.alert = f.alert;
      rule.line = LineOf(node);
      if (f.params) return Error(*f.params, where + ": 'params' applies to detector rules only");
      Result<std::string> text = Scalar(*f.expr, where + ": expr");
      if (!text.ok()) return text.status();
      Result<Expr> expr = Expr::Parse(*text);
      if (!expr.ok()) return Error(*f.expr, "expr: " + expr.status().message());
      rule.expr = std::move(*expr);
      if (f.hold && !f.hold->IsNull()) {
        Result<std::string> hold_text = Scalar(*f.hold, where + ": for");
        if (!hold_text.ok()) return hold_text.status();
        Result<Hold> hold = ParseHold(*hold_text);
        if (!hold.ok()) return Error(*f.hold, where + ": for: " + hold.status().message());
        rule.hold = *hold;
      }
      rule.severity = severity.empty() ? "warning" : severity;
      rule.labels = std::move(labels);
      rule.labels["severity"] = rule.severity;
      rule.annotations = std::move(annotations);
      group->rules.push_back(std::move(rule));
      return Status::Ok();
    }
    DetectorRule rule;
    rule.group = group->name;
    rule.alert = f.alert;
    rule.line = LineOf(node);
    if (f.hold) return Error(*f.hold, where + ": 'for' applies to expression rules only");
    Result<std::string> kind_name = Scalar(*f.detector, where + ": detector");
    if (!kind_name.ok()) return kind_name.status();
    std::optional<detect::AlertKind> kind = detect::KindFromName(*kind_name);
    if (!kind) {
      std::string known;
      for (int k = 0; k < detect::kAlertKindCount; ++k) {
        known += std::string(k ? ", " : "") +
                 std::string(detect::KindName(static_cast<detect::AlertKind>(k)));
      }
      return Error(*f.detector,
                   where + ": unknown detector '" + *kind_name + "' (known: " + known + ")");
    }
    rule.kind = *kind;
    for (const DetectorRule& other : group->detector_rules) {
      if (other.kind == *kind) {
        return Error(*f.detector, where + ": detector '" + *kind_name +
                                      "' is already decorated by alert '" + other.alert +
                                      "' in this group");
      }
    }
    TW_RETURN_IF_ERROR(ForEachEntry(
        f.params.value_or(YAML::Node()), where + ": params",
        [&](const std::string& param, const YAML::Node& pk, const YAML::Node& v) {
          if (param == "enabled") {
            return Error(pk, where + ": params: 'enabled' cannot be set by a rule; use detectors." +
                                 *kind_name + ".enabled");
          }
          Result<std::string> text = Scalar(v, where + ": params." + param);
          if (!text.ok()) return text.status();
          Status s = rule.params.Set(*kind_name, param, *text);
          return s.ok() ? s : Error(v.IsNull() ? pk : v, where + ": params: " + s.message());
        }));
    rule.severity = severity.empty() ? std::string(detect::DefaultSeverity(*kind)) : severity;
    rule.labels = std::move(labels);
    rule.labels["severity"] = rule.severity;
    rule.annotations = std::move(annotations);
    group->detector_rules.push_back(std::move(rule));
    return Status::Ok();
  }

  // `action: stop | notify_only` travels with the alert as its label "action", which the SDK
  // reads to stop the training job (docs/rules.md "Actions"); absent means notify_only.
  Status ParseAction(const RuleFields& f, const std::string& where,
                     std::map<std::string, std::string>* labels) const {
    if (labels->contains("action")) {
      return Error(*f.labels, where + ": labels: 'action' is set by the rule's 'action:' key");
    }
    if (!f.action) return Status::Ok();
    Result<std::string> action = Scalar(*f.action, where + ": action");
    if (!action.ok()) return action.status();
    if (*action != "stop" && *action != "notify_only") {
      return Error(*f.action,
                   where + ": action: expected stop or notify_only, got '" + *action + "'");
    }
    (*labels)["action"] = *action;
    return Status::Ok();
  }

  Status ParseLabels(const YAML::Node& node, const std::string& where,
                     std::map<std::string, std::string>* labels, std::string* severity) const {
    return ForEachEntry(
        node, where + ": labels",
        [&](const std::string& key, const YAML::Node& k, const YAML::Node& v) {
          if (!IsLabelName(key)) {
            return Error(k, where + ": labels: bad label name '" + key +
                                "' (letters, digits and _, not starting with a digit)");
          }
          Result<std::string> value = Scalar(v, where + ": labels." + key);
          if (!value.ok()) return value.status();
          if (key == "severity") {
            if (!IsSeverity(*value)) {
              return Error(v, where +
                                  ": labels.severity: expected info, warning or critical, got '" +
                                  *value + "'");
            }
            *severity = *value;
          }
          (*labels)[key] = *value;
          return Status::Ok();
        });
  }

  Status ParseAnnotations(const YAML::Node& node, const std::string& where,
                          const std::map<std::string, std::string>& labels,
                          std::map<std::string, Template>* out) const {
    return ForEachEntry(node, where + ": annotations",
                        [&](const std::string& key, const YAML::Node& k, const YAML::Node& v) {
                          Result<std::string> text = Scalar(v, where + ": annotations." + key);
                          if (!text.ok()) return text.status();
                          Result<Template> t = Template::Parse(*text);
                          if (!t.ok())
                            return Error(
                                v, where + ": annotations." + key + ": " + t.status().message());
                          for (const std::string& label : t->label_refs()) {
                            if (label != "severity" && !labels.contains(label)) {
                              return Error(v, where + ": annotations." + key + ": label '" + label +
                                                  "' is not among the rule's labels");
                            }
                          }
                          (*out)[key] = std::move(*t);
                          return Status::Ok();
                        });
  }

  std::string file_;
};

// A YAML stream is printable Unicode (YAML 1.2: UTF-8 here, and no control characters but tab and
// line breaks). yaml-cpp does not check: it passes bytes that are not UTF-8 through and misreads
// some control characters (a NUL can come out as bytes that are not UTF-8), while names, labels and
// annotations end up in JSON (GET /api/v1/rules, notifications), which must be UTF-8.
Status CheckPrintable(std::string_view text, const std::string& file_name) {
  size_t bad = Utf8ValidPrefix(text);
  std::string why = "not valid UTF-8";
  for (size_t i = 0; i < bad; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F) {
      bad = i;
      why = "control character " + std::to_string(c);
      break;
    }
  }
  if (bad == text.size()) return Status::Ok();
  const auto line = 1 + std::count(text.begin(), text.begin() + bad, '\n');
  return Status::InvalidArgument(file_name + ":" + std::to_string(line) + ": " + why + " (byte " +
                                 std::to_string(bad) + ")");
}

}  // namespace

Result<RuleSet> ParseRules(std::string_view yaml_text, const std::string& file_name) {
  TW_RETURN_IF_ERROR(CheckPrintable(yaml_text, file_name));
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    const int line = e.mark.line < 0 ? 0 : e.mark.line + 1;
    return Status::InvalidArgument(file_name + ":" + std::to_string(line) + ": bad YAML: " + e.msg);
  }
  try {
    return FileParser(file_name).Run(root);
  } catch (const YAML::Exception& e) {  // not expected: the walk checks node types first
    const int line = e.mark.line < 0 ? 0 : e.mark.line + 1;
    return Status::InvalidArgument(file_name + ":" + std::to_string(line) + ": " + e.msg);
  }
}

Result<RuleSet> LoadRules(FileSystem& fs, const std::string& path) {
  if (path.empty()) return RuleSet();
  Result<std::string> text = fs.ReadFile(path);
  if (!text.ok()) return text.status().WithContext("reading rule file");
  return ParseRules(*text, path);
}

Result<RuleSet> LoadRules(const std::string& path) { return LoadRules(PosixFileSystem(), path); }

}  // namespace trainwatch::rules

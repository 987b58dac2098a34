#include "notify/notify_config.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <set>

#include "common/duration.h"

namespace trainwatch::notify {
namespace {

std::optional<std::string> ProcessEnv(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

bool HasScheme(const std::string& url, std::initializer_list<const char*> schemes) {
  for (const char* s : schemes) {
    std::string prefix = std::string(s) + "://";
    if (url.size() > prefix.size() && url.compare(0, prefix.size(), prefix) == 0) return true;
  }
  return false;
}

// Reads one file's sections. Every error is "<file> line <n>: <where>: <reason>".
class Parser {
 public:
  Parser(const std::string& file, const EnvLookup& env) : file_(file), env_(env) {}

  Result<NotifyConfig> Parse(const YAML::Node& root) {
    NotifyConfig config;
    if (!root.IsDefined() || root.IsNull()) return config;
    if (!root.IsMap()) return Error(root, "top level", "expected a mapping");
    if (YAML::Node receivers = root["receivers"]; receivers.IsDefined() && !receivers.IsNull()) {
      if (!receivers.IsSequence()) return Error(receivers, "receivers", "expected a list");
      std::set<std::string> names;
      for (size_t i = 0; i < receivers.size(); ++i) {
        TW_ASSIGN_OR_RETURN(ReceiverConfig r,
                            Receiver(receivers[i], "receivers[" + std::to_string(i) + "]"));
        if (!names.insert(r.name).second) {
          return Error(receivers[i]["name"], "receivers[" + std::to_string(i) + "]",
                       "duplicate receiver name '" + r.name + "'");
        }
        config.receivers.push_back(std::move(r));
      }
    }
    if (YAML::Node routes = root["routes"]; routes.IsDefined() && !routes.IsNull()) {
      if (!routes.IsSequence()) return Error(routes, "routes", "expected a list");
      for (size_t i = 0; i < routes.size(); ++i) {
        TW_ASSIGN_OR_RETURN(Route r,
                            ParseRoute(routes[i], "routes[" + std::to_string(i) + "]", config));
        config.routes.push_back(std::move(r));
      }
    }
    return config;
  }

 private:
  Status Error(const YAML::Node& at, const std::string& where, const std::string& reason) const {
    int line = at.IsDefined() ? at.Mark().line + 1 : 0;
    return Status::InvalidArgument(file_ + " line " + std::to_string(line) + ": " + where + ": " +
                                   reason);
  }

  // Fails on the first key of `map` that is not in `allowed`.
  Status CheckKeys(const YAML::Node& map, const std::string& where,
                   std::initializer_list<const char*> allowed) const {
    for (const auto& entry : map) {
      std::string key = entry.first.Scalar();
      bool known = false;
      for (const char* a : allowed) known |= key == a;
      if (!known) return Error(entry.first, where, "unknown key '" + key + "'");
    }
    return Status::Ok();
  }

  Result<std::string> String(const YAML::Node& map, const char* key, const std::string& where,
                             bool required) const {
    YAML::Node v = map[key];
    if (!v.IsDefined() || v.IsNull()) {
      if (required) return Error(map, where, std::string("missing '") + key + "'");
      return std::string();
    }
    if (!v.IsScalar()) return Error(v, where, std::string("'") + key + "' must be a string");
    return v.Scalar();
  }

  Result<bool> Bool(const YAML::Node& map, const char* key, const std::string& where,
                    bool fallback) const {
    YAML::Node v = map[key];
    if (!v.IsDefined() || v.IsNull()) return fallback;
    bool out = false;
    if (!v.IsScalar() || !YAML::convert<bool>::decode(v, out)) {
      return Error(v, where, std::string("'") + key + "' must be true or false");
    }
    return out;
  }

  Result<double> Timeout(const YAML::Node& map, const std::string& where) const {
    YAML::Node v = map["timeout"];
    if (!v.IsDefined() || v.IsNull()) return 5.0;
    if (!v.IsScalar()) return Error(v, where, "'timeout' must be a duration");
    Result<double> d = ParseDuration(v.Scalar());
    if (!d.ok()) return Error(v, where, "timeout: " + d.status().message());
    if (*d <= 0) return Error(v, where, "timeout must be positive");
    return d;
  }

  Result<std::vector<std::string>> StringList(const YAML::Node& map, const char* key,
                                              const std::string& where) const {
    std::vector<std::string> out;
    YAML::Node v = map[key];
    if (!v.IsDefined() || v.IsNull()) return out;
    if (!v.IsSequence()) return Error(v, where, std::string("'") + key + "' must be a list");
    for (const auto& item : v) {
      if (!item.IsScalar())
        return Error(item, where, std::string("'") + key + "' items must be strings");
      out.push_back(item.Scalar());
    }
    return out;
  }

  // `plain_key` or `env_key` (the name of an environment variable holding it), not both.
  Result<std::string> Secret(const YAML::Node& map, const char* plain_key, const char* env_key,
                             const std::string& where) const {
    TW_ASSIGN_OR_RETURN(std::string plain, String(map, plain_key, where, false));
    TW_ASSIGN_OR_RETURN(std::string var, String(map, env_key, where, false));
    if (var.empty()) return plain;
    if (!plain.empty()) {
      return Error(map[env_key], where,
                   std::string("set '") + plain_key + "' or '" + env_key + "', not both");
    }
    std::optional<std::string> value = env_(var);
    if (!value || value->empty()) {
      return Error(map[env_key], where, "environment variable " + var + " is not set");
    }
    return *value;
  }

  Result<std::string> Url(const YAML::Node& map, const char* key, const std::string& where,
                          std::initializer_list<const char*> schemes) const {
    TW_ASSIGN_OR_RETURN(std::string url, String(map, key, where, true));
    if (!HasScheme(url, schemes)) {
      std::string list;
      for (const char* s : schemes) list += (list.empty() ? "" : " or ") + std::string(s) + "://";
      return Error(map[key], where, "'" + url + "' must start with " + list);
    }
    return url;
  }

  Result<ReceiverConfig> Receiver(const YAML::Node& node, std::string where) const {
    if (!node.IsMap()) return Error(node, where, "expected a mapping");
    TW_RETURN_IF_ERROR(
        CheckKeys(node, where, {"name", "webhook", "slack", "email", "alertmanager"}));
    ReceiverConfig r;
    r.line = node.Mark().line + 1;
    TW_ASSIGN_OR_RETURN(r.name, String(node, "name", where, true));
    if (r.name.empty()) return Error(node["name"], where, "empty receiver name");
    where += " (" + r.name + ")";
    int kinds = 0;
    for (const char* k : {"webhook", "slack", "email", "alertmanager"})
      kinds += node[k].IsDefined();
    if (kinds != 1) {
      return Error(node, where,
                   std::string(kinds == 0 ? "no" : "more than one") +
                       " receiver kind: set exactly one of webhook, slack, email, alertmanager");
    }
    if (YAML::Node n = node["webhook"]; n.IsDefined()) {
      TW_ASSIGN_OR_RETURN(r.options, Webhook(n, where + ".webhook"));
    } else if (YAML::Node n = node["slack"]; n.IsDefined()) {
      TW_ASSIGN_OR_RETURN(r.options, Slack(n, where + ".slack"));
    } else if (YAML::Node n = node["email"]; n.IsDefined()) {
      TW_ASSIGN_OR_RETURN(r.options, Email(n, where + ".email"));
    } else {
      TW_ASSIGN_OR_RETURN(r.options, Alertmanager(node["alertmanager"], where + ".alertmanager"));
    }
    return r;
  }

  Result<WebhookOptions> Webhook(const YAML::Node& n, const std::string& where) const {
    if (!n.IsMap()) return Error(n, where, "expected a mapping");
    TW_RETURN_IF_ERROR(CheckKeys(n, where, {"url", "secret", "secret_env", "timeout", "headers"}));
    WebhookOptions o;
    TW_ASSIGN_OR_RETURN(o.url, Url(n, "url", where, {"http", "https"}));
    TW_ASSIGN_OR_RETURN(o.secret, Secret(n, "secret", "secret_env", where));
    TW_ASSIGN_OR_RETURN(o.timeout_seconds, Timeout(n, where));
    if (YAML::Node h = n["headers"]; h.IsDefined() && !h.IsNull()) {
      if (!h.IsMap()) return Error(h, where, "'headers' must be a mapping of name: value");
      for (const auto& entry : h) {
        const std::string name = entry.first.Scalar();
        bool valid = !name.empty() && entry.second.IsScalar();
        for (char c : name) valid &= c > 0x20 && c < 0x7f && c != ':';
        for (char c : entry.second.Scalar()) valid &= c != '\r' && c != '\n';
        if (!valid) return Error(entry.first, where, "bad header '" + name + "'");
        o.headers.emplace_back(name, entry.second.Scalar());
      }
    }
    return o;
  }

  Result<SlackOptions> Slack(const YAML::Node& n, const std::string& where) const {
    if (!n.IsMap()) return Error(n, where, "expected a mapping");
    TW_RETURN_IF_ERROR(CheckKeys(n, where, {"url", "timeout"}));
    SlackOptions o;
    TW_ASSIGN_OR_RETURN(o.url, Url(n, "url", where, {"http", "https"}));
    TW_ASSIGN_OR_RETURN(o.timeout_seconds, Timeout(n, where));
    return o;
  }

  Result<EmailOptions> Email(const YAML::Node& n, const std::string& where) const {
    if (!n.IsMap()) return Error(n, where, "expected a mapping");
    TW_RETURN_IF_ERROR(CheckKeys(
        n, where,
        {"smtp", "from", "to", "username", "password", "password_env", "starttls", "timeout"}));
    EmailOptions o;
    TW_ASSIGN_OR_RETURN(o.smtp_url, Url(n, "smtp", where, {"smtp", "smtps"}));
    TW_ASSIGN_OR_RETURN(o.from, String(n, "from", where, true));
    if (EmailAddress(o.from).find('@') == std::string::npos) {
      return Error(n["from"], where, "'from' is not an email address");
    }
    TW_ASSIGN_OR_RETURN(o.to, StringList(n, "to", where));
    if (o.to.empty()) return Error(n, where, "'to' must list at least one address");
    for (size_t i = 0; i < o.to.size(); ++i) {
      if (EmailAddress(o.to[i]).find('@') == std::string::npos) {
        return Error(n["to"][i], where, "'" + o.to[i] + "' is not an email address");
      }
    }
    TW_ASSIGN_OR_RETURN(o.username, String(n, "username", where, false));
    TW_ASSIGN_OR_RETURN(o.password, Secret(n, "password", "password_env", where));
    TW_ASSIGN_OR_RETURN(o.starttls, Bool(n, "starttls", where, false));
    if (o.starttls && o.smtp_url.rfind("smtps://", 0) == 0) {
      return Error(n["starttls"], where,
                   "starttls applies to smtp:// only (smtps:// is TLS already)");
    }
    TW_ASSIGN_OR_RETURN(o.timeout_seconds, Timeout(n, where));
    return o;
  }

  Result<AlertmanagerOptions> Alertmanager(const YAML::Node& n, const std::string& where) const {
    if (!n.IsMap()) return Error(n, where, "expected a mapping");
    TW_RETURN_IF_ERROR(CheckKeys(n, where, {"url", "timeout"}));
    AlertmanagerOptions o;
    TW_ASSIGN_OR_RETURN(o.url, Url(n, "url", where, {"http", "https"}));
    TW_ASSIGN_OR_RETURN(o.timeout_seconds, Timeout(n, where));
    return o;
  }

  Result<Route> ParseRoute(const YAML::Node& node, const std::string& where,
                           const NotifyConfig& config) const {
    if (!node.IsMap()) return Error(node, where, "expected a mapping");
    TW_RETURN_IF_ERROR(
        CheckKeys(node, where, {"receiver", "projects", "kinds", "min_severity", "send_resolved"}));
    Route r;
    r.line = node.Mark().line + 1;
    TW_ASSIGN_OR_RETURN(r.receiver, String(node, "receiver", where, true));
    bool known = false;
    for (const ReceiverConfig& rc : config.receivers) known |= rc.name == r.receiver;
    if (!known) return Error(node["receiver"], where, "unknown receiver '" + r.receiver + "'");
    TW_ASSIGN_OR_RETURN(r.projects, StringList(node, "projects", where));
    TW_ASSIGN_OR_RETURN(r.kinds, StringList(node, "kinds", where));
    for (size_t i = 0; i < r.kinds.size(); ++i) {
      if (!IsKnownKind(r.kinds[i])) {
        return Error(node["kinds"][i], where, "unknown kind '" + r.kinds[i] + "'");
      }
    }
    TW_ASSIGN_OR_RETURN(std::string severity, String(node, "min_severity", where, false));
    if (!severity.empty()) {
      std::optional<Severity> s = ParseSeverity(severity);
      if (!s) {
        return Error(node["min_severity"], where,
                     "unknown severity '" + severity + "' (info, warning or critical)");
      }
      r.min_severity = *s;
    }
    TW_ASSIGN_OR_RETURN(r.send_resolved, Bool(node, "send_resolved", where, true));
    return r;
  }

  const std::string& file_;
  const EnvLookup& env_;
};

}  // namespace


Result<NotifyConfig> ParseNotifyConfig(const YAML::Node& root, const std::string& file) {
  return ParseNotifyConfig(root, file, ProcessEnv);
}

Result<NotifyConfig> ParseNotifyConfig(const YAML::Node& root, const std::string& file,
                                       const EnvLookup& env) {
  try {
    return Parser(file, env).Parse(root);
  } catch (const YAML::Exception& e) {  // the parse edge: yaml-cpp reports by throwing
    return Status::InvalidArgument(file + " line " + std::to_string(e.mark.line + 1) + ": " +
                                   e.msg);
  }
}

std::unique_ptr<Notifier> BuildNotifier(const ReceiverConfig& receiver, const Clock& clock) {
  struct Build {
    const Clock& clock;
    std::unique_ptr<Notifier> operator()(const WebhookOptions& o) const {
      return std::make_unique<WebhookNotifier>(o, clock);
    }
    std::unique_ptr<Notifier> operator()(const SlackOptions& o) const {
      return std::make_unique<SlackNotifier>(o);
    }
    std::unique_ptr<Notifier> operator()(const EmailOptions& o) const {
      return std::make_unique<EmailNotifier>(o, clock);
    }
    std::unique_ptr<Notifier> operator()(const AlertmanagerOptions& o) const {
      return std::make_unique<AlertmanagerNotifier>(o, clock);
    }
  };
  return std::visit(Build{clock}, receiver.options);
}

}  // namespace trainwatch::notify

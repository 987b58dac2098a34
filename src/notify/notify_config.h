// The `receivers:` and `routes:` sections of an alerting YAML file, and the notifiers they build.
//
//   receivers:
//     - name: ops
//       webhook: {url: "http://...", secret: "s3cr3t", timeout: 5s, headers: {X-Team: ml}}
//                                              # secret_env: VAR instead of secret
//     - name: chat
//       slack: {url: "https://hooks.slack.com/...", timeout: 5s}
//     - name: mail
//       email: {smtp: "smtp://host:25", from: "tw@example.com", to: ["a@example.com"],
//               username: "", password: "", starttls: false, timeout: 5s}
//                                              # password_env: VAR instead of password
//     - name: am
//       alertmanager: {url: "http://127.0.0.1:9093", timeout: 5s}
//   routes:
//     - receiver: ops
//       projects: ["vision-*"]        # fnmatch globs; absent: every project
//       kinds: [nan, grad_explosion]  # absent: every kind; "rule" matches user rules
//       min_severity: warning         # info < warning < critical; default info
//       send_resolved: true          # default true
//
// Other top-level keys belong to other parts of the server and are ignored.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "notify/alertmanager_notifier.h"
#include "notify/email_notifier.h"
#include "notify/notifier.h"
#include "notify/route.h"
#include "notify/slack_notifier.h"
#include "notify/webhook_notifier.h"

namespace YAML {
class Node;
}

namespace trainwatch::notify {

struct ReceiverConfig {
  std::string name;
  std::variant<WebhookOptions, SlackOptions, EmailOptions, AlertmanagerOptions> options;
  int line = 0;  // where the receiver was configured (1-based)
};

struct NotifyConfig {
  std::vector<ReceiverConfig> receivers;  // names unique
  std::vector<Route> routes;              // each names one of `receivers`
};

// Reads an environment variable; nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// Parses the `receivers` and `routes` keys of `root` (both optional; a null root gives an empty
// config). `file` names the file in error messages. `env` resolves secret_env / password_env
// (the process environment in the two-argument form). Returns InvalidArgument
// "<file> line <n>: <where>: <reason>" for: an unknown key, a missing or ill-typed value, a
// receiver with no kind or more than one, a duplicate or empty receiver name, a URL with the
// wrong scheme, an unset environment variable, a bad duration ("5s", "500ms", "1m", a plain
// number is seconds), a route naming an unknown receiver, an unknown kind or severity.
Result<NotifyConfig> ParseNotifyConfig(const YAML::Node& root, const std::string& file);
Result<NotifyConfig> ParseNotifyConfig(const YAML::Node& root, const std::string& file,
                                       const EnvLookup& env);


// The notifier a receiver describes. `clock` must outlive it.
std::unique_ptr<Notifier> BuildNotifier(const ReceiverConfig& receiver, const Clock& clock);

}  // namespace trainwatch::notify

#include "notify/notify_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

namespace trainwatch::notify {
namespace {

using ::testing::HasSubstr;

std::optional<std::string> FakeEnv(const std::string& name) {
  if (name == "HOOK_SECRET") return std::string("from-env");
  return std::nullopt;
}

Result<NotifyConfig> Parse(const std::string& yaml) {
  return ParseNotifyConfig(YAML::Load(yaml), "alerting.yml", FakeEnv);
}

constexpr const char* kValid = R"(
rules:                      # belongs to someone else
  - alert: LossHigh
receivers:
  - name: ops
    webhook: {url: "http://127.0.0.1:9000/hook", secret: "s3cr3t", timeout: 500ms,
              headers: {X-Team: ml}}
  - name: ops-env
    webhook: {url: "https://example.com/hook", secret_env: HOOK_SECRET}
  - name: chat
    slack: {url: "https://hooks.slack.com/services/T/B/X"}
  - name: mail
    email: {smtp: "smtp://127.0.0.1:2525", from: "Trainwatch <tw@example.com>",
            to: ["a@example.com", "b@example.com"], username: "u", password: "p",
            starttls: true, timeout: 10s}
  - name: am
    alertmanager: {url: "http://127.0.0.1:9093"}
routes:
  - receiver: ops
    projects: ["vision-*"]
    kinds: [nan, grad_explosion]
    min_severity: warning
    send_resolved: false
  - receiver: am
)";

TEST(NotifyConfig, ParsesEveryReceiverKindAndRoute) {
  Result<NotifyConfig> c = Parse(kValid);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->receivers.size(), 5u);

  const auto& ops = std::get<WebhookOptions>(c->receivers[0].options);
  EXPECT_EQ(c->receivers[0].name, "ops");
  EXPECT_EQ(c->receivers[0].line, 5);
  EXPECT_EQ(ops.url, "http://127.0.0.1:9000/hook");
  EXPECT_EQ(ops.secret, "s3cr3t");
  EXPECT_DOUBLE_EQ(ops.timeout_seconds, 0.5);
  ASSERT_EQ(ops.headers.size(), 1u);
  EXPECT_EQ(ops.headers[0].first, "X-Team");
  EXPECT_EQ(std::get<WebhookOptions>(c->receivers[1].options).secret, "from-env");
  EXPECT_DOUBLE_EQ(std::get<WebhookOptions>(c->receivers[1].options).timeout_seconds, 5);
  EXPECT_EQ(std::get<SlackOptions>(c->receivers[2].options).url,
            "https://hooks.slack.com/services/T/B/X");
  const auto& mail = std::get<EmailOptions>(c->receivers[3].options);
  EXPECT_EQ(mail.smtp_url, "smtp://127.0.0.1:2525");
  EXPECT_EQ(mail.from, "Trainwatch <tw@example.com>");
  EXPECT_EQ(mail.to, (std::vector<std::string>{"a@example.com", "b@example.com"}));
  EXPECT_EQ(mail.username, "u");
  EXPECT_EQ(mail.password, "p");
  EXPECT_TRUE(mail.starttls);
  EXPECT_DOUBLE_EQ(mail.timeout_seconds, 10);
  EXPECT_EQ(std::get<AlertmanagerOptions>(c->receivers[4].options).url, "http://127.0.0.1:9093");

  ASSERT_EQ(c->routes.size(), 2u);
  const Route& r = c->routes[0];
  EXPECT_EQ(r.receiver, "ops");
  EXPECT_EQ(r.projects, std::vector<std::string>{"vision-*"});
  EXPECT_EQ(r.kinds, (std::vector<std::string>{"nan", "grad_explosion"}));
  EXPECT_EQ(r.min_severity, Severity::kWarning);
  EXPECT_FALSE(r.send_resolved);
  EXPECT_EQ(c->routes[1].receiver, "am");
  EXPECT_TRUE(c->routes[1].projects.empty());
  EXPECT_EQ(c->routes[1].min_severity, Severity::kInfo);
  EXPECT_TRUE(c->routes[1].send_resolved);
}

TEST(NotifyConfig, EmptyOrAbsentSectionsAreAnEmptyConfig) {
  for (const char* yaml : {"", "rules: []", "receivers: []\nroutes: []"}) {
    Result<NotifyConfig> c = Parse(yaml);
    ASSERT_TRUE(c.ok()) << yaml << ": " << c.status().ToString();
    EXPECT_TRUE(c->receivers.empty());
    EXPECT_TRUE(c->routes.empty());
  }
}

struct BadCase {
  const char* yaml;
  int line;
  const char* reason;
};

TEST(NotifyConfig, EachErrorNamesFileLineAndReason) {
  const BadCase cases[] = {
      {"receivers:\n  - name: a\n    webhook: {url: \"http://x\", urll: 1}\n", 3,
       "unknown key 'urll'"},
      {"receivers:\n  - name: a\n    colour: red\n    webhook: {url: \"http://x\"}\n", 3,
       "unknown key 'colour'"},
      {"receivers:\n  - name: a\n    webhook: {url: \"http://x\"}\nroutes:\n  - receiver: b\n", 5,
       "unknown receiver 'b'"},
      {"receivers:\n  - name: a\n    webhook: {url: \"http://x\"}\n  - name: a\n    slack: {url: "
       "\"http://y\"}\n",
       4, "duplicate receiver name 'a'"},
      {"receivers:\n  - name: a\n    webhook: {url: \"ftp://x\"}\n", 3,
       "must start with http:// or https://"},
      {"receivers:\n  - name: a\n    email: {smtp: \"http://x\", from: a@b.c, to: [d@e.f]}\n", 3,
       "must start with smtp:// or smtps://"},
      {"receivers:\n  - name: a\n", 2, "no receiver kind"},
      {"receivers:\n  - name: a\n    webhook: {url: \"http://x\"}\n    slack: {url: "
       "\"http://y\"}\n",
       2, "more than one receiver kind"},
      {"receivers:\n  - name: a\n    webhook: {url: \"http://x\"}\nroutes:\n  - receiver: a\n"
       "    min_severity: fatal\n",
       6, "unknown severity 'fatal'"},
      {"receivers:\n  - name: a\n    webhook: {url: \"http://x\"}\nroutes:\n  - receiver: a\n"
       "    kinds: [nan, grad]\n",
       6, "unknown kind 'grad'"},
      {"receivers:\n  - name: a\n    webhook: {url: \"http://x\", timeout: 5 parsecs}\n", 3,
       "bad duration"},
      {"receivers:\n  - name: a\n    webhook: {url: \"http://x\", secret_env: NOPE}\n", 3,
       "environment variable NOPE is not set"},
      {"receivers:\n  - name: a\n    email: {smtp: \"smtp://x\", from: a@b.c}\n", 3,
       "'to' must list at least one address"},
      {"receivers:\n  - name: a\n    webhook: {url: \"http://x\"}\nroutes:\n  - receiver: a\n"
       "    send_resolved: maybe\n",
       6, "must be true or false"},
      {"receivers:\n  - webhook: {url: \"http://x\"}\n", 2, "missing 'name'"},
      {"receivers: {name: a}\n", 1, "expected a list"},
  };
  for (const BadCase& c : cases) {
    Result<NotifyConfig> r = Parse(c.yaml);
    ASSERT_FALSE(r.ok()) << c.yaml;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(),
                HasSubstr("alerting.yml line " + std::to_string(c.line) + ":"))
        << c.yaml;
    EXPECT_THAT(r.status().message(), HasSubstr(c.reason)) << c.yaml;
  }
}

}  // namespace
}  // namespace trainwatch::notify

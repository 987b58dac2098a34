// The notifiers against real receivers on loopback: the test HTTP and SMTP listeners.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "notify/alertmanager_notifier.h"
#include "notify/email_notifier.h"
#include "notify/slack_notifier.h"
#include "notify/testing/http_listener.h"
#include "notify/testing/sample_notification.h"
#include "notify/testing/smtp_listener.h"
#include "notify/webhook_notifier.h"

namespace trainwatch::notify {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

// The verification a receiver does, written independently of WebhookSignature.
std::string HmacHex(const std::string& key, const std::string& message) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &len);
  std::string hex;
  char buf[3];
  for (unsigned int i = 0; i < len; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", mac[i]);
    hex += buf;
  }
  return hex;
}

TEST(WebhookNotifier, PostsTheJsonBodySigned) {
  test::HttpListener hook;
  ManualClock clock(1767225700.9);
  WebhookNotifier notifier({hook.Url("/hook"), "s3cr3t", 5, {{"X-Team", "ml"}}}, clock);
  Notification n = test::SampleNotification();
  ASSERT_TRUE(notifier.Send(n).ok());

  std::vector<test::RecordedRequest> reqs = hook.Requests();
  ASSERT_EQ(reqs.size(), 1u);
  const test::RecordedRequest& r = reqs[0];
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.path, "/hook");
  EXPECT_EQ(r.headers.at("content-type"), "application/json");
  EXPECT_EQ(r.headers.at("x-team"), "ml");
  EXPECT_EQ(r.body, NotificationToJson(n));
  json body = json::parse(r.body);
  EXPECT_EQ(body["alert_id"], "42");
  EXPECT_EQ(body["status"], "firing");
  EXPECT_EQ(body["chart_url"], n.chart_url);
  EXPECT_EQ(body["idempotency_key"], n.idempotency_key);
  EXPECT_EQ(r.headers.at("idempotency-key"), n.idempotency_key);

  EXPECT_EQ(r.headers.at("x-trainwatch-timestamp"), "1767225700");
  EXPECT_EQ(r.headers.at("x-trainwatch-signature"),
            "sha256=" + HmacHex("s3cr3t", "1767225700." + r.body));
}

TEST(WebhookNotifier, SignatureMatchesThePythonRecipe) {
  // hmac.new(b"s3cr3t", b"1767225700." + body, hashlib.sha256).hexdigest(), as in
  // docs/notifications.md.
  EXPECT_EQ(WebhookSignature("s3cr3t", "1767225700", R"({"alert_id":"42"})"),
            "sha256=e9418319bd12926e24f38075735ee69bd24cbffeb9a3b1c56e7e568d8e743d3f");
}

TEST(WebhookNotifier, UnsignedWithoutSecret) {
  test::HttpListener hook;
  ManualClock clock;
  ASSERT_TRUE(
      WebhookNotifier({hook.Url(), "", 5, {}}, clock).Send(test::SampleNotification()).ok());
  ASSERT_EQ(hook.Requests().size(), 1u);
  EXPECT_EQ(hook.Requests()[0].headers.count("x-trainwatch-signature"), 0u);
}

TEST(WebhookNotifier, ClassifiesFailures) {
  test::HttpListener hook;
  ManualClock clock;
  WebhookNotifier notifier({hook.Url(), "", 5, {}}, clock);
  Notification n = test::SampleNotification();
  for (int code : {500, 503, 429, 408}) {
    hook.FailNext(1, code);
    Status s = notifier.Send(n);
    EXPECT_EQ(s.code(), StatusCode::kUnavailable) << code;
    EXPECT_THAT(s.message(), HasSubstr("HTTP " + std::to_string(code)));
  }
  for (int code : {400, 401, 404, 301}) {
    hook.FailNext(1, code);
    EXPECT_EQ(notifier.Send(n).code(), StatusCode::kInvalidArgument) << code;
  }
  Status down =
      WebhookNotifier({"http://127.0.0.1:" + std::to_string(test::UnusedPort()), "", 5, {}}, clock)
          .Send(n);
  EXPECT_EQ(down.code(), StatusCode::kUnavailable);
}

TEST(SlackNotifier, PostsTextAndColouredAttachment) {
  test::HttpListener slack;
  SlackNotifier notifier({slack.Url("/services/T/B/X"), 5});
  ASSERT_TRUE(notifier.Send(test::SampleNotification()).ok());
  ASSERT_TRUE(notifier.Send(test::SampleNotification("42", "resolved")).ok());
  std::vector<test::RecordedRequest> reqs = slack.Requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].path, "/services/T/B/X");

  json firing = json::parse(reqs[0].body);
  std::string text = firing["text"];
  EXPECT_THAT(text, HasSubstr("FIRING critical grad_explosion in vision-resnet/run-7"));
  EXPECT_THAT(text, HasSubstr("grad_norm 812 is 40x its running median"));
  EXPECT_THAT(text, HasSubstr("<" + test::SampleNotification().chart_url + "|chart>"));
  ASSERT_EQ(firing["attachments"].size(), 1u);
  EXPECT_EQ(firing["attachments"][0]["color"], "#e01e5a");
  EXPECT_EQ(firing["attachments"][0]["title_link"], test::SampleNotification().chart_url);

  json resolved = json::parse(reqs[1].body);
  EXPECT_THAT(resolved["text"].get<std::string>(), HasSubstr("RESOLVED"));
  EXPECT_EQ(resolved["attachments"][0]["color"], "#2eb67d");
}

TEST(SlackNotifier, ARunReportLinksTheReport) {
  Notification n = test::SampleNotification();
  n.kind = n.name = "run_report";
  n.metric = "";
  n.labels = {{"run_status", "finished"}};
  n.message = "run finished; report: http://tw/r";
  n.report_url = "http://tw/api/v1/report/stored?project=p&run=r";
  n.chart_url = "http://tw/#/runs/p/r";
  auto body = nlohmann::json::parse(SlackPayload(n));
  const std::string text = body["text"].get<std::string>();
  EXPECT_EQ(text.rfind("REPORT run vision-resnet/run-7 finished: run finished", 0), 0u) << text;
  EXPECT_THAT(text, HasSubstr("<http://tw/api/v1/report/stored?project=p&run=r|report>"));
  EXPECT_THAT(text, Not(HasSubstr("(step")));
  EXPECT_EQ(body["attachments"][0]["title_link"], n.report_url);
  const std::string mail = EmailMessage(n, {"smtp://x", "tw@x", {"a@x"}}, 0, "id@x");
  EXPECT_THAT(mail, HasSubstr("Subject: [trainwatch] REPORT run vision-resnet/run-7 finished"));
  EXPECT_THAT(mail, HasSubstr("Report: " + n.report_url));
  EXPECT_THAT(mail, Not(HasSubstr("Step:")));
  auto am = nlohmann::json::parse(AlertmanagerPayload(n, 0));
  EXPECT_EQ(am[0]["annotations"]["report_url"], n.report_url);
}

TEST(SlackNotifier, EscapesMarkup) {
  Notification n = test::SampleNotification();
  n.message = "loss <spiked> & fell";
  json body = json::parse(SlackPayload(n));
  EXPECT_THAT(body["text"].get<std::string>(), HasSubstr("loss &lt;spiked&gt; &amp; fell"));
}

TEST(AlertmanagerNotifier, PostsOnePostableAlert) {
  test::HttpListener am;
  ManualClock clock(1767229999.0);
  AlertmanagerNotifier notifier({am.Url() + "/", 5}, clock);
  Notification n = test::SampleNotification();
  n.labels["bad-name"] = "x";
  ASSERT_TRUE(notifier.Send(n).ok());
  Notification resolved = test::SampleNotification("42", "resolved");
  ASSERT_TRUE(notifier.Send(resolved).ok());

  std::vector<test::RecordedRequest> reqs = am.Requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].method, "POST");
  EXPECT_EQ(reqs[0].path, "/api/v2/alerts");
  json firing = json::parse(reqs[0].body);
  ASSERT_TRUE(firing.is_array());
  ASSERT_EQ(firing.size(), 1u);
  const json& a = firing[0];
  EXPECT_EQ(a["labels"]["alertname"], "grad_explosion");
  EXPECT_EQ(a["labels"]["alert_id"], "42");
  EXPECT_EQ(a["labels"]["project"], "vision-resnet");
  EXPECT_EQ(a["labels"]["run"], "run-7");
  EXPECT_EQ(a["labels"]["kind"], "grad_explosion");
  EXPECT_EQ(a["labels"]["metric"], "grad_norm");
  EXPECT_EQ(a["labels"]["severity"], "critical");
  EXPECT_EQ(a["labels"]["team"], "vision");
  EXPECT_EQ(a["labels"]["bad_name"], "x");
  EXPECT_EQ(a["annotations"]["summary"], n.message);
  EXPECT_EQ(a["annotations"]["runbook"], "https://wiki.example.com/grad");
  EXPECT_EQ(a["annotations"]["step"], "1200");
  EXPECT_EQ(a["annotations"]["value"], "40.25");
  EXPECT_EQ(a["annotations"]["idempotency_key"], n.idempotency_key);
  EXPECT_EQ(a["startsAt"], "2026-01-01T00:00:01.250Z");
  EXPECT_FALSE(a.contains("endsAt"));
  EXPECT_EQ(a["generatorURL"], n.chart_url);

  json r = json::parse(reqs[1].body)[0];
  EXPECT_EQ(r["endsAt"], "2026-01-01T00:05:01.750Z");
  resolved.ends_at = 0;
  EXPECT_EQ(json::parse(AlertmanagerPayload(resolved, 1767229999.0))[0]["endsAt"],
            "2026-01-01T01:13:19.000Z");
}

TEST(EmailNotifier, DeliversOverSmtp) {
  test::SmtpListener smtp;
  ManualClock clock(1767225700.0);
  EmailOptions options;
  options.smtp_url = smtp.Url();
  options.from = "Trainwatch <tw@example.com>";
  options.to = {"a@example.com", "Bob <b@example.com>"};
  EmailNotifier notifier(options, clock);
  Notification n = test::SampleNotification();
  n.message = "line one\n.line starting with a dot";
  Status s = notifier.Send(n);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_TRUE(smtp.WaitForMessages(1, 5));

  test::SmtpMessage m = smtp.Messages()[0];
  EXPECT_EQ(m.mail_from, "tw@example.com");
  EXPECT_EQ(m.rcpt_to, (std::vector<std::string>{"a@example.com", "b@example.com"}));
  EXPECT_THAT(m.data, HasSubstr("Subject: [trainwatch] FIRING critical grad_explosion in "
                                "vision-resnet/run-7\r\n"));
  EXPECT_THAT(m.data, HasSubstr("From: Trainwatch <tw@example.com>\r\n"));
  EXPECT_THAT(m.data, HasSubstr("To: a@example.com, Bob <b@example.com>\r\n"));
  EXPECT_THAT(m.data, HasSubstr("Date: Thu, 01 Jan 2026 00:01:40 +0000\r\n"));
  EXPECT_THAT(m.data, HasSubstr("Message-ID: <trainwatch.42.firing."));
  EXPECT_THAT(m.data, HasSubstr("Content-Type: text/plain; charset=utf-8\r\n"));
  EXPECT_THAT(m.data, HasSubstr("\r\n\r\nFIRING critical grad_explosion"));
  EXPECT_THAT(m.data, HasSubstr("line one\r\n.line starting with a dot\r\n"));
  for (const char* field :
       {"Project:   vision-resnet", "Run:       run-7", "Metric:    grad_norm", "Step:      1200",
        "Value:     40.25", "Alert id:  42", "Label:     team=vision"}) {
    EXPECT_THAT(m.data, HasSubstr(std::string(field) + "\r\n"));
  }
  EXPECT_THAT(m.data, HasSubstr("Chart: " + n.chart_url + "\r\n"));
  EXPECT_EQ(m.data.find("\n", 0), m.data.find("\r\n") + 1);  // CRLF line endings
}

TEST(EmailNotifier, ClassifiesFailures) {
  test::SmtpListener smtp;
  ManualClock clock;
  EmailOptions options;
  options.smtp_url = smtp.Url();
  options.from = "tw@example.com";
  options.to = {"a@example.com"};
  smtp.SetRcptReply(550);
  EXPECT_EQ(EmailNotifier(options, clock).Send(test::SampleNotification()).code(),
            StatusCode::kInvalidArgument);
  smtp.SetRcptReply(451);
  EXPECT_EQ(EmailNotifier(options, clock).Send(test::SampleNotification()).code(),
            StatusCode::kUnavailable);
  options.smtp_url = "smtp://127.0.0.1:" + std::to_string(test::UnusedPort());
  EXPECT_EQ(EmailNotifier(options, clock).Send(test::SampleNotification()).code(),
            StatusCode::kUnavailable);
}

TEST(EmailNotifier, EncodesNonAsciiSubjectsAndKeepsHeadersOnOneLine) {
  EmailOptions options;
  options.smtp_url = "smtp://x";
  options.from = "tw@example.com";
  options.to = {"a@example.com"};
  Notification n = test::SampleNotification();
  n.run = "lauf-\u00fc";
  std::string msg = EmailMessage(n, options, 0, "id@x");
  EXPECT_THAT(msg, HasSubstr("Subject: =?UTF-8?B?"));
  n.run = "evil\r\nBcc: x@example.com";
  msg = EmailMessage(n, options, 0, "id@x");
  std::string headers = msg.substr(0, msg.find("\r\n\r\n"));
  EXPECT_EQ(headers.find("\r\nBcc:"), std::string::npos);
}

}  // namespace
}  // namespace trainwatch::notify

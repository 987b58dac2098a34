#include "notify/slack_notifier.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "notify/http_post.h"

namespace trainwatch::notify {
namespace {

using nlohmann::json;

// Slack's mrkdwn needs only these three escaped.
std::string Escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '&')
      out += "&amp;";
    else if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else
      out.push_back(c);
  }
  return out;
}

std::string Color(const Notification& n) {
  if (n.resolved()) return "#2eb67d";
  switch (SeverityOf(n)) {
    case Severity::kCritical:
      return "#e01e5a";
    case Severity::kWarning:
      return "#ecb22e";
    case Severity::kInfo:
      return "#36c5f0";
  }
  return "#36c5f0";
}

std::string FormatNumber(double v) {
  if (!std::isfinite(v)) return std::isnan(v) ? "NaN" : (v > 0 ? "+Inf" : "-Inf");
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

json Field(const std::string& title, const std::string& value) {
  return {{"title", title}, {"value", Escape(value)}, {"short", true}};
}

}  // namespace

std::string SlackPayload(const Notification& n) {
  // A run report is about the whole run: no step, metric or value.
  const bool run_report = n.kind == "run_report";
  std::string text = Escape(Headline(n)) + ": " + Escape(n.message);
  if (!run_report) text += " (step " + std::to_string(n.step) + ")";
  if (!n.chart_url.empty()) text += " <" + n.chart_url + "|chart>";
  if (!n.report_url.empty()) text += " <" + n.report_url + "|report>";
  json fields = json::array({Field("Project", n.project), Field("Run", n.run),
                             Field("Severity", n.severity), Field("Kind", n.kind)});
  if (!n.metric.empty()) fields.push_back(Field("Metric", n.metric));
  if (!run_report) {
    fields.push_back(Field("Step", std::to_string(n.step)));
    fields.push_back(Field("Value", FormatNumber(n.value)));
  }
  for (const auto& [k, v] : n.labels) fields.push_back(Field(k, v));
  double ts = n.resolved() && n.ends_at != 0 ? n.ends_at : n.starts_at;
  // Within int64 (converting a double beyond it is undefined): outbox entries are read back from
  // disk.
  ts = std::isfinite(ts) ? std::clamp(ts, kMinRfc3339Seconds, kMaxRfc3339Seconds) : 0;
  json attachment = {
      {"color", Color(n)},
      {"fallback", Escape(Headline(n))},
      {"title", Escape(Headline(n))},
      {"text", Escape(n.message)},
      {"fields", fields},
      {"footer", "trainwatch alert " + Escape(n.alert_id) +
                     (n.idempotency_key.empty() ? "" : " · key " + n.idempotency_key)},
      {"ts", static_cast<int64_t>(ts)},
  };
  if (!n.report_url.empty())
    attachment["title_link"] = n.report_url;
  else if (!n.chart_url.empty())
    attachment["title_link"] = n.chart_url;
  json body = {{"text", text}, {"attachments", json::array({attachment})}};
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

SlackNotifier::SlackNotifier(SlackOptions options) : options_(std::move(options)) {}

Status SlackNotifier::Send(const Notification& n) {
  HttpPost post;
  post.url = options_.url;
  post.body = SlackPayload(n);
  post.timeout_seconds = options_.timeout_seconds;
  post.headers.push_back("Content-Type: application/json");
  if (!n.idempotency_key.empty()) post.headers.push_back("Idempotency-Key: " + n.idempotency_key);
  return PerformHttpPost(post).WithContext("slack");
}

}  // namespace trainwatch::notify

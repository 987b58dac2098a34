#include "notify/alertmanager_notifier.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "notify/http_post.h"

namespace trainwatch::notify {
namespace {

using nlohmann::json;

std::string LabelName(const std::string& name) {
  std::string out = name.empty() ? "_" : name;
  for (size_t i = 0; i < out.size(); ++i) {
    char c = out[i];
    bool ok = c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) out[i] = '_';
  }
  return out;
}

std::string FormatNumber(double v) {
  if (!std::isfinite(v)) return std::isnan(v) ? "NaN" : (v > 0 ? "+Inf" : "-Inf");
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string TrimSlash(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

}  // namespace

std::string AlertmanagerPayload(const Notification& n, double now) {
  json labels = json::object();
  for (const auto& [k, v] : n.labels) {
    if (!v.empty()) labels[LabelName(k)] = v;
  }
  labels["alertname"] = n.name.empty() ? n.kind : n.name;
  labels["alert_id"] = n.alert_id;
  labels["project"] = n.project;
  labels["run"] = n.run;
  labels["kind"] = n.kind;
  labels["severity"] = n.severity;
  if (!n.metric.empty()) labels["metric"] = n.metric;
  for (auto it = labels.begin(); it != labels.end();) {  // Alertmanager rejects empty values
    if (it->is_string() && it->get<std::string>().empty())
      it = labels.erase(it);
    else
      ++it;
  }

  json annotations = json::object();
  for (const auto& [k, v] : n.annotations) annotations[LabelName(k)] = v;
  annotations["summary"] = n.message;
  annotations["step"] = std::to_string(n.step);
  annotations["value"] = FormatNumber(n.value);
  if (!n.chart_url.empty()) annotations["chart_url"] = n.chart_url;
  if (!n.report_url.empty()) annotations["report_url"] = n.report_url;
  if (!n.idempotency_key.empty()) annotations["idempotency_key"] = n.idempotency_key;

  json alert = {
      {"labels", labels}, {"annotations", annotations}, {"startsAt", FormatRfc3339(n.starts_at)}};
  if (n.resolved()) alert["endsAt"] = FormatRfc3339(n.ends_at != 0 ? n.ends_at : now);
  if (!n.chart_url.empty()) alert["generatorURL"] = n.chart_url;
  return json::array({alert}).dump(-1, ' ', false, json::error_handler_t::replace);
}

AlertmanagerNotifier::AlertmanagerNotifier(AlertmanagerOptions options, const Clock& clock)
    : options_(std::move(options)),
      endpoint_(TrimSlash(options_.url) + "/api/v2/alerts"),
      clock_(clock) {}

Status AlertmanagerNotifier::Send(const Notification& n) {
  HttpPost post;
  post.url = endpoint_;
  post.body = AlertmanagerPayload(n, clock_.NowUnixSeconds());
  post.timeout_seconds = options_.timeout_seconds;
  post.headers.push_back("Content-Type: application/json");
  return PerformHttpPost(post).WithContext("alertmanager");
}

}  // namespace trainwatch::notify

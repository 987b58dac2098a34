#include "notify/notification.h"
#include "common/json.h"

#include <openssl/sha.h>
#include <algorithm>
#include <array>
#include <cmath>
#include <ctime>
#include <nlohmann/json.hpp>

#include "common/strings.h"

namespace trainwatch::notify {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 12> kKinds = {
    "nan",        "grad_explosion", "grad_vanishing", "loss_spike", "loss_oscillation",
    "divergence", "plateau",        "overfitting",    "stalled",    "throughput_drop",
    "rule",       "run_report"};

json NumberOrNull(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

// Reads an optional field into *out; InvalidArgument naming the field on a type mismatch.
Status ReadString(const json& j, const char* key, std::string* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (!it->is_string())
    return Status::InvalidArgument(std::string("'") + key + "' is not a string");
  *out = it->get<std::string>();
  return Status::Ok();
}

Status ReadNumber(const json& j, const char* key, double null_value, double* out) {
  auto it = j.find(key);
  if (it == j.end()) return Status::Ok();
  if (it->is_null()) {
    *out = null_value;
    return Status::Ok();
  }
  if (!it->is_number())
    return Status::InvalidArgument(std::string("'") + key + "' is not a number");
  *out = it->get<double>();
  return Status::Ok();
}

Status ReadStringMap(const json& j, const char* key, std::map<std::string, std::string>* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (!it->is_object())
    return Status::InvalidArgument(std::string("'") + key + "' is not an object");
  for (const auto& [k, v] : it->items()) {
    if (!v.is_string()) {
      return Status::InvalidArgument(std::string("'") + key + "." + k + "' is not a string");
    }
    (*out)[k] = v.get<std::string>();
  }
  return Status::Ok();
}

}  // namespace

std::optional<Severity> ParseSeverity(std::string_view text) {
  if (text == "info") return Severity::kInfo;
  if (text == "warning") return Severity::kWarning;
  if (text == "critical") return Severity::kCritical;
  return std::nullopt;
}

Severity SeverityOf(const Notification& n) {
  return ParseSeverity(n.severity).value_or(Severity::kInfo);
}

bool IsKnownKind(std::string_view kind) {
  for (std::string_view k : kKinds) {
    if (k == kind) return true;
  }
  return false;
}

std::string NotificationToJson(const Notification& n) {
  json j = {
      {"version", 1},
      {"alert_id", n.alert_id},
      {"status", n.status},
      {"project", n.project},
      {"run", n.run},
      {"kind", n.kind},
      {"name", n.name},
      {"metric", n.metric},
      {"severity", n.severity},
      {"message", n.message},
      {"step", n.step},
      {"value", NumberOrNull(n.value)},
      {"time", NumberOrNull(n.time)},
      {"starts_at", NumberOrNull(n.starts_at)},
      {"ends_at", n.ends_at == 0 ? json(nullptr) : NumberOrNull(n.ends_at)},
      {"labels", n.labels},
      {"annotations", n.annotations},
      {"chart_url", n.chart_url},
  };
  if (!n.idempotency_key.empty()) j["idempotency_key"] = n.idempotency_key;
  if (!n.report_url.empty()) j["report_url"] = n.report_url;
  // Invalid UTF-8 (from a user's label, say) is replaced rather than thrown on.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<Notification> NotificationFromJson(std::string_view text) {
  Result<json> parsed = ParseJson(text);
  if (!parsed.ok()) return parsed.status().WithContext("notification");
  json j = std::move(*parsed);
  if (!j.is_object()) return Status::InvalidArgument("notification: not a JSON object");
  Notification n;
  const std::array<std::pair<const char*, std::string*>, 12> strings = {{
      {"alert_id", &n.alert_id},
      {"status", &n.status},
      {"project", &n.project},
      {"run", &n.run},
      {"kind", &n.kind},
      {"name", &n.name},
      {"metric", &n.metric},
      {"severity", &n.severity},
      {"message", &n.message},
      {"chart_url", &n.chart_url},
      {"idempotency_key", &n.idempotency_key},
      {"report_url", &n.report_url},
  }};
  for (const auto& [key, out] : strings) {
    TW_RETURN_IF_ERROR(ReadString(j, key, out).WithContext("notification"));
  }
  double step = 0;
  TW_RETURN_IF_ERROR(ReadNumber(j, "step", 0, &step).WithContext("notification"));
  if (auto it = j.find("step"); it != j.end() && it->is_number_integer()) {
    n.step = it->get<int64_t>();
  } else if (step >= -9.2e18 &&
             step <= 9.2e18) {  // (converting a double out of range is undefined)
    n.step = static_cast<int64_t>(step);
  } else {
    return Status::InvalidArgument("notification: step " + std::to_string(step) +
                                   " is out of range");
  }
  const double nan = std::nan("");
  TW_RETURN_IF_ERROR(ReadNumber(j, "value", nan, &n.value).WithContext("notification"));
  TW_RETURN_IF_ERROR(ReadNumber(j, "time", nan, &n.time).WithContext("notification"));
  TW_RETURN_IF_ERROR(ReadNumber(j, "starts_at", nan, &n.starts_at).WithContext("notification"));
  TW_RETURN_IF_ERROR(ReadNumber(j, "ends_at", 0, &n.ends_at).WithContext("notification"));
  TW_RETURN_IF_ERROR(ReadStringMap(j, "labels", &n.labels).WithContext("notification"));
  TW_RETURN_IF_ERROR(ReadStringMap(j, "annotations", &n.annotations).WithContext("notification"));
  return n;
}

std::string IncidentId(std::string_view fingerprint, int64_t first_step) {
  std::string data(fingerprint);
  data.push_back('\x1f');
  data += std::to_string(first_step);
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  return LowerHex(std::string_view(reinterpret_cast<const char*>(digest), 16));
}

std::string IdempotencyKey(std::string_view incident_id, std::string_view status) {
  return std::string(incident_id) + "-" + std::string(status);
}

std::string FormatRfc3339(double t) {
  if (!std::isfinite(t)) t = 0;
  t = std::clamp(t, kMinRfc3339Seconds, kMaxRfc3339Seconds);  // a client's time can be any number
  int64_t ms = static_cast<int64_t>(std::llround(t * 1000));
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  int millis = static_cast<int>(ms % 1000);
  if (millis < 0) {
    millis += 1000;
    --secs;
  }
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
  return buf;
}

std::string Headline(const Notification& n) {
  if (n.kind == "run_report") {
    auto status = n.labels.find("run_status");
    return "REPORT run " + n.project + "/" + n.run + " " +
           (status == n.labels.end() ? std::string("ended") : status->second);
  }
  std::string out = n.resolved() ? "RESOLVED " : "FIRING ";
  out += n.severity + " " + (n.name.empty() ? n.kind : n.name) + " in " + n.project + "/" + n.run;
  return out;
}

}  // namespace trainwatch::notify

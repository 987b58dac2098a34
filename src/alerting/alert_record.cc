#include "alerting/alert_record.h"

#include <cstdio>
#include <random>

#include "common/glob.h"
#include "notify/notification.h"

namespace trainwatch::alerting {
namespace {

double NumberOr(const nlohmann::json& j, const char* key, double fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

}  // namespace

nlohmann::json FiniteOrNull(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

std::string_view StatusName(AlertStatus status) {
  switch (status) {
    case AlertStatus::kPending:
      return "pending";
    case AlertStatus::kFiring:
      return "firing";
    case AlertStatus::kResolved:
      return "resolved";
  }
  return "unknown";
}

Result<AlertStatus> ParseStatus(std::string_view name) {
  if (name == "pending") return AlertStatus::kPending;
  if (name == "firing") return AlertStatus::kFiring;
  if (name == "resolved") return AlertStatus::kResolved;
  return Status::InvalidArgument("status must be pending, firing or resolved, not '" +
                                 std::string(name) + "'");
}

std::string AlertRecord::Fingerprint() const {
  std::string f = project;
  for (const std::string* part : {&run, &kind, &name}) {
    f.push_back('\x1f');
    f += *part;
  }
  if (rank >= 0) {
    f.push_back('\x1f');
    f += std::to_string(rank);
  }
  return f;
}

std::string AlertRecord::IncidentId() const {
  return notify::IncidentId(Fingerprint(), first_step);
}

std::string AlertRecord::IdempotencyKey(std::string_view status) const {
  return notify::IdempotencyKey(IncidentId(), status);
}

nlohmann::json AlertRecord::ToJson() const {
  nlohmann::json j{{"id", id},
                   {"project", project},
                   {"run", run},
                   {"kind", kind},
                   {"name", name},
                   {"metric", metric},
                   {"severity", severity},
                   {"message", message},
                   {"step", step},
                   {"first_step", first_step},
                   {"incident_id", IncidentId()},
                   {"time", FiniteOrNull(time)},
                   {"value", FiniteOrNull(value)},
                   {"labels", labels},
                   {"annotations", annotations},
                   {"status", StatusName(status)},
                   {"started_at", started_at},
                   {"fired_at", fired_at},
                   {"resolved_at", resolved_at},
                   {"resolved_step", resolved_step},
                   {"updated_at", updated_at},
                   {"occurrences", occurrences},
                   {"acknowledged", acknowledged},
                   {"acknowledged_by", acknowledged_by},
                   {"acknowledged_at", acknowledged_at},
                   {"silenced_by", silenced_by},
                   {"notified", notified}};
  if (rank >= 0) {
    j["rank"] = rank;
    j["host"] = host;
  }
  return j;
}

Result<AlertRecord> AlertRecord::FromJson(const nlohmann::json& j) {
  try {
    AlertRecord a;
    a.id = j.at("id").get<uint64_t>();
    a.project = j.at("project").get<std::string>();
    a.run = j.at("run").get<std::string>();
    a.kind = j.at("kind").get<std::string>();
    a.name = j.value("name", a.kind);
    a.metric = j.value("metric", "");
    a.severity = j.value("severity", "warning");
    a.message = j.value("message", "");
    a.step = j.value("step", int64_t{0});
    a.first_step = j.value("first_step", a.step);  // records written before it existed
    a.time = NumberOr(j, "time", NAN);
    a.value = NumberOr(j, "value", NAN);
    a.rank = j.value("rank", int64_t{-1});
    a.host = j.value("host", "");
    a.labels = j.value("labels", std::map<std::string, std::string>{});
    a.annotations = j.value("annotations", std::map<std::string, std::string>{});
    TW_ASSIGN_OR_RETURN(a.status, ParseStatus(j.value("status", "firing")));
    a.started_at = NumberOr(j, "started_at", 0);
    a.fired_at = NumberOr(j, "fired_at", 0);
    a.resolved_at = NumberOr(j, "resolved_at", 0);
    a.resolved_step = j.value("resolved_step", int64_t{0});
    a.updated_at = NumberOr(j, "updated_at", 0);
    a.occurrences = j.value("occurrences", uint64_t{1});
    a.acknowledged = j.value("acknowledged", false);
    a.acknowledged_by = j.value("acknowledged_by", "");
    a.acknowledged_at = NumberOr(j, "acknowledged_at", 0);
    a.silenced_by = j.value("silenced_by", uint64_t{0});
    a.notified = j.value("notified", "");
    return a;
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(std::string("alert record: ") + e.what());
  }
}

bool Silence::Matches(const AlertRecord& alert) const {
  return (project.empty() || GlobMatch(project, alert.project)) &&
         (run.empty() || GlobMatch(run, alert.run)) && (kind.empty() || kind == alert.kind) &&
         (name.empty() || GlobMatch(name, alert.name));
}

nlohmann::json Silence::ToJson() const {
  return nlohmann::json{{"id", id},
                        {"uid", uid},
                        {"project", project},
                        {"run", run},
                        {"kind", kind},
                        {"name", name},
                        {"comment", comment},
                        {"created_by", created_by},
                        {"starts_at", starts_at},
                        {"ends_at", ends_at}};
}

Result<Silence> Silence::FromJson(const nlohmann::json& j) {
  try {
    Silence s;
    s.id = j.value("id", uint64_t{0});
    s.uid = j.value("uid", "");
    s.project = j.value("project", "");
    s.run = j.value("run", "");
    s.kind = j.value("kind", "");
    s.name = j.value("name", "");
    s.comment = j.value("comment", "");
    s.created_by = j.value("created_by", "");
    s.starts_at = NumberOr(j, "starts_at", 0);
    s.ends_at = NumberOr(j, "ends_at", 0);
    return s;
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(std::string("silence: ") + e.what());
  }
}

std::string Silence::NewUid() {
  std::random_device random;
  std::string uid;
  for (int i = 0; i < 4; ++i) {
    char part[9];
    std::snprintf(part, sizeof part, "%08x", static_cast<unsigned>(random()));
    uid += part;
  }
  return uid;
}

}  // namespace trainwatch::alerting

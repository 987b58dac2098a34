// AlertRecord and Silence: what the server keeps about each alert and each silence, and their JSON
// form (the API's and the alert store's; docs/api.md "Alerts").
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace trainwatch::alerting {

// pending: a rule's condition holds but not yet for its `for`; firing; resolved: the condition
// cleared (or the rule went away).
enum class AlertStatus { kPending, kFiring, kResolved };
std::string_view StatusName(AlertStatus status);
Result<AlertStatus> ParseStatus(std::string_view name);

// A number for JSON, which has no NaN or infinities: those become null.
nlohmann::json FiniteOrNull(double v);

struct AlertRecord {
  uint64_t id = 0;
  std::string project, run;
  std::string kind;  // a detector kind ("nan", ...) or "rule"
  std::string name;  // the rule's `alert` name; the kind for detector alerts
  std::string metric;
  std::string severity;  // info | warning | critical
  std::string message;
  int64_t step = 0;  // the step the incident is attributed to
  // The step the incident began at (its first pending or firing record), kept while it reopens:
  // with the fingerprint, its identity across the nodes of a cluster (IncidentId).
  int64_t first_step = 0;
  double time = NAN;  // that record's timestamp
  double value = 0;   // the detector's statistic or the rule's value
  // The rank of a distributed run the alert concerns and its host; -1 / "": the run. JSON: "rank"
  // and "host" only when it concerns a rank.
  int64_t rank = -1;
  std::string host;
  std::map<std::string, std::string> labels, annotations;

  AlertStatus status = AlertStatus::kFiring;
  double started_at = 0;   // server clock: first pending or firing
  double fired_at = 0;     // server clock: last transition to firing (0: never fired)
  double resolved_at = 0;  // server clock; 0 unless resolved
  double updated_at = 0;
  int64_t resolved_step = 0;
  uint64_t occurrences = 1;  // how many times the same incident was reported (deduplicated)
  bool acknowledged = false;
  std::string acknowledged_by;
  double acknowledged_at = 0;
  uint64_t silenced_by = 0;  // the silence that muted its notifications; 0: none
  // The last status receivers were told ("" none, "firing", "resolved"): a quietly reopened or
  // silenced alert sends no "resolved" for a "firing" nobody received.
  std::string notified;

  // One incident per (project, run, kind, name, rank): a repeat while it is open is the same alert.
  std::string Fingerprint() const;
  // notify::IncidentId of the fingerprint and first_step: the same on every node.
  std::string IncidentId() const;
  // The idempotency key of the notification of `status` ("firing" or "resolved").
  std::string IdempotencyKey(std::string_view status) const;
  nlohmann::json ToJson() const;
  static Result<AlertRecord> FromJson(const nlohmann::json& j);
};

// Mutes notifications of matching alerts between starts_at and ends_at (they are still recorded).
// Empty matchers match everything; project, run and name accept globs (common/glob.h).
struct Silence {
  uint64_t id = 0;  // this server's
  std::string uid;  // the same on every node of a cluster (a random 128-bit hex number)
  std::string project, run, kind, name;
  std::string comment, created_by;
  double starts_at = 0, ends_at = 0;  // unix seconds

  bool Active(double now) const { return starts_at <= now && now < ends_at; }
  bool Matches(const AlertRecord& alert) const;
  nlohmann::json ToJson() const;
  static Result<Silence> FromJson(const nlohmann::json& j);
  // A new uid: 32 hex digits from the system's random source.
  static std::string NewUid();
};

}  // namespace trainwatch::alerting

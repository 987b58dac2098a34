// Notification: one lifecycle event (firing or resolved) of one alert, as handed to notifiers,
// and its generic JSON form (the webhook body, also what the outbox stores).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace trainwatch::notify {

struct Notification {
  std::string alert_id;  // stable id of the alert, e.g. "42"; the same for its firing and resolved
  std::string status;    // "firing" or "resolved"
  std::string project, run;
  // "nan", "grad_explosion", "grad_vanishing", "loss_spike", "loss_oscillation", "divergence",
  // "plateau", "overfitting", "stalled", "throughput_drop", "rule" for user rules, or
  // "run_report": a run ended (finished or crashed) and its report was stored (report_url).
  std::string kind;
  std::string name;      // the rule's `alert` name, or the kind
  std::string metric;    // "" for time-based kinds
  std::string severity;  // "info", "warning" or "critical"
  std::string message;
  int64_t step = 0;
  double value = 0;
  double time = 0;       // the record's own unix time (NaN if unknown)
  double starts_at = 0;  // unix seconds, server clock
  double ends_at = 0;    // unix seconds, server clock; 0 while firing
  std::map<std::string, std::string> labels, annotations;
  std::string chart_url;  // link to the chart at the step ("" if none)
  // Link to the run's stored report (docs/reports.md, "Automatic reports"); "" if none.
  std::string report_url;
  // The same for every delivery of this status of this incident, from whichever node of a cluster
  // sends it (IdempotencyKey): a receiver that has seen it may drop the delivery. "" if unknown
  // (a notification read from an outbox written before the key existed).
  std::string idempotency_key;
  // A reminder that the alert is still firing: delivered only to receivers that want repeats
  // (Notifier::WantsRepeats), never to the others. Not part of the JSON form.
  bool repeat = false;

  bool operator==(const Notification&) const = default;  // NaN fields compare unequal
  bool resolved() const { return status == "resolved"; }
};

// The closed set of severities, in increasing order.
enum class Severity { kInfo = 0, kWarning = 1, kCritical = 2 };

// Parses "info", "warning", "critical"; nullopt otherwise.
std::optional<Severity> ParseSeverity(std::string_view text);
// The rank of a notification's severity; an unknown severity ranks as kInfo.
Severity SeverityOf(const Notification& n);

// True for the ten detector kinds, "rule" and "run_report".
bool IsKnownKind(std::string_view kind);

// The identity of one incident, the same on every node that saw the same records: the first 32 hex
// digits of SHA-256 over the alert's fingerprint, a 0x1f byte and the step the incident began at
// (decimal). Never built from a node's own alert ids.
std::string IncidentId(std::string_view fingerprint, int64_t first_step);
// "<incident id>-<status>" ("...-firing", "...-resolved"): the idempotency key of a notification.
// Only letters, digits and '-', so it is also a valid NATS key-value key and HTTP header value.
std::string IdempotencyKey(std::string_view incident_id, std::string_view status);

// The generic webhook body: one JSON object (no trailing newline),
//   {"version":1,"alert_id":"42","status":"firing","project":"p","run":"r","kind":"nan",
//    "name":"nan","metric":"loss","severity":"critical","message":"...","step":120,
//    "value":1.5,"time":1767225600.5,"starts_at":1767225601.0,"ends_at":null,
//    "labels":{},"annotations":{},"chart_url":"http://...",
//    "idempotency_key":"3f0c...e1-firing"}
// Numbers that are not finite (value, time) are written as null; ends_at is null while firing
// (ends_at == 0); idempotency_key is left out when empty. Doubles are written with enough digits to
// read back exactly. Keys may be added in later versions; receivers must ignore unknown keys.
std::string NotificationToJson(const Notification& n);

// Reads NotificationToJson's output back (null numbers become NaN, a null ends_at becomes 0).
// InvalidArgument naming the field for malformed input; unknown keys are ignored.
Result<Notification> NotificationFromJson(std::string_view json);

// The unix seconds RFC 3339 can write, 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z.
inline constexpr double kMinRfc3339Seconds = -62135596800.0;
inline constexpr double kMaxRfc3339Seconds = 253402300799.0;

// "2026-01-01T00:00:00.000Z" (RFC 3339, UTC, milliseconds) for unix seconds `t`; a time outside
// [kMinRfc3339Seconds, kMaxRfc3339Seconds] is written as that bound, one that is not finite as 0.
std::string FormatRfc3339(double t);

// "FIRING critical grad_explosion in vision/run-7" ("RESOLVED ..." once resolved): the one-line
// headline shared by the Slack text and the email subject. Uses `name` (the kind for built-in
// detectors, the rule's alert name for user rules). A run_report notification reads
// "REPORT run vision/run-7 finished" (its label run_status).
std::string Headline(const Notification& n);

}  // namespace trainwatch::notify

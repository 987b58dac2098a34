// AlertmanagerNotifier: posts to Prometheus Alertmanager's API, POST <base>/api/v2/alerts, a JSON
// array of one postableAlert:
//   labels       alertname (the notification's name), alert_id, project, run, kind, metric (when
//                set), severity, then the notification's labels (which cannot override these);
//                label names are made valid ([a-zA-Z_][a-zA-Z0-9_]*, other characters become '_')
//   annotations  summary (the message), step, value, chart_url (when set), then the
//                notification's annotations
//   startsAt     starts_at, RFC 3339
//   endsAt       resolved: ends_at (the time of sending when 0); firing: left out
//   generatorURL chart_url (left out when empty)
//
// A firing alert is sent without endsAt. Alertmanager marks it resolved by itself once its
// `resolve_timeout` (default 5m) passes without the alert being posted again, so the server
// re-sends every firing alert (Notification::repeat, every minute) to receivers that want repeats
// — this one — as Prometheus does.
#pragma once

#include <string>

#include "common/clock.h"
#include "notify/notifier.h"

namespace trainwatch::notify {

struct AlertmanagerOptions {
  std::string url;  // the base URL, http:// or https:// (e.g. "http://127.0.0.1:9093")
  double timeout_seconds = 5;
};

// The JSON body AlertmanagerNotifier posts for `n`; `now` is used as endsAt for a resolved
// notification without ends_at.
std::string AlertmanagerPayload(const Notification& n, double now);

// Thread-safe. `clock` must outlive the notifier.
class AlertmanagerNotifier final : public Notifier {
 public:
  AlertmanagerNotifier(AlertmanagerOptions options, const Clock& clock);
  Status Send(const Notification& n) override;
  bool WantsRepeats() const override { return true; }

 private:
  const AlertmanagerOptions options_;
  const std::string endpoint_;  // <base>/api/v2/alerts
  const Clock& clock_;
};

}  // namespace trainwatch::notify

// Notifier: delivers one Notification to one receiver (a webhook, Slack, email, Alertmanager).
#pragma once

#include "common/status.h"
#include "notify/notification.h"

namespace trainwatch::notify {

// Implementations are thread-safe (Send may run on several threads at once) and hold no state
// between calls beyond their immutable settings.
class Notifier {
 public:
  virtual ~Notifier();

  // Delivers `n`, synchronously, within the notifier's timeout (5 s unless configured). Returns
  //  - OK once the receiver accepted it;
  //  - Unavailable for failures worth retrying unchanged: no connection, a timeout, HTTP 5xx,
  //    408 or 429, an SMTP 4xx reply;
  //  - InvalidArgument for permanent failures: another HTTP 4xx, a redirect, an SMTP 5xx reply,
  //    a refused login. Retrying these cannot help; the outbox logs and drops them.
  // The message names the receiver's host and the reason (status line, curl error).
  virtual Status Send(const Notification& n) = 0;

  // Whether the receiver wants a firing alert sent again while it lasts (Notification::repeat):
  // Alertmanager resolves an alert by itself unless it is re-posted within its resolve_timeout.
  virtual bool WantsRepeats() const { return false; }
};

// True when a Send failure should be retried (Unavailable); every other code is permanent.
inline bool IsRetryable(const Status& s) { return s.code() == StatusCode::kUnavailable; }

}  // namespace trainwatch::notify

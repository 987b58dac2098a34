// WebhookNotifier: POSTs the generic JSON body (NotificationToJson) to a URL, signed when a
// secret is set.
//
// Signing, as Stripe and Slack do it: with a secret, each request carries
//   X-Trainwatch-Timestamp: <unix seconds, integer, sender's clock>
//   X-Trainwatch-Signature: sha256=<lower-case hex of HMAC-SHA256(secret, timestamp + "." + body)>
// To verify, a receiver recomputes the HMAC over the timestamp header, a '.', and the raw body
// bytes exactly as received (before any JSON parsing), compares it with the header in constant
// time, and rejects timestamps more than a few minutes from its own clock (replay protection).
// docs/notifications.md has a Python recipe.
#pragma once

#include <string>
#include <vector>

#include "common/clock.h"
#include "notify/notifier.h"

namespace trainwatch::notify {

struct WebhookOptions {
  std::string url;     // http:// or https://
  std::string secret;  // empty: unsigned
  double timeout_seconds = 5;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers, sent as given
};

// "sha256=<hex>": the X-Trainwatch-Signature value for `body` sent at `timestamp`.
std::string WebhookSignature(const std::string& secret, const std::string& timestamp,
                             const std::string& body);

// Thread-safe. `clock` (for the signature timestamp) must outlive the notifier.
class WebhookNotifier final : public Notifier {
 public:
  WebhookNotifier(WebhookOptions options, const Clock& clock);
  Status Send(const Notification& n) override;

 private:
  const WebhookOptions options_;
  const Clock& clock_;
};

}  // namespace trainwatch::notify

#include "notify/webhook_notifier.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cmath>

#include "common/strings.h"
#include "notify/http_post.h"

namespace trainwatch::notify {

std::string WebhookSignature(const std::string& secret, const std::string& timestamp,
                             const std::string& body) {
  std::string message = timestamp + "." + body;
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &mac_len);
  return "sha256=" + LowerHex(std::string_view(reinterpret_cast<const char*>(mac), mac_len));
}

WebhookNotifier::WebhookNotifier(WebhookOptions options, const Clock& clock)
    : options_(std::move(options)), clock_(clock) {}

Status WebhookNotifier::Send(const Notification& n) {
  HttpPost post;
  post.url = options_.url;
  post.body = NotificationToJson(n);
  post.timeout_seconds = options_.timeout_seconds;
  post.headers.push_back("Content-Type: application/json");
  // The body's idempotency_key, also as the header of the IETF draft (outside the signed body).
  if (!n.idempotency_key.empty()) post.headers.push_back("Idempotency-Key: " + n.idempotency_key);
  if (!options_.secret.empty()) {
    std::string timestamp =
        std::to_string(static_cast<int64_t>(std::floor(clock_.NowUnixSeconds())));
    post.headers.push_back("X-Trainwatch-Timestamp: " + timestamp);
    post.headers.push_back("X-Trainwatch-Signature: " +
                           WebhookSignature(options_.secret, timestamp, post.body));
  }
  for (const auto& [name, value] : options_.headers) post.headers.push_back(name + ": " + value);
  return PerformHttpPost(post).WithContext("webhook");
}

}  // namespace trainwatch::notify

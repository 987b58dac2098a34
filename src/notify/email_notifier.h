// EmailNotifier: sends one plain-text email per notification over SMTP (libcurl).
//
// The message (RFC 5322, CRLF line endings; libcurl dot-stuffs it on the wire):
//   Date, From, To, Subject: "[trainwatch] FIRING critical grad_explosion in project/run"
//   (RFC 2047-encoded when not ASCII), Message-ID, MIME-Version, Content-Type: text/plain;
//   charset=utf-8, Content-Transfer-Encoding: 8bit; the body lists every field and the chart link.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "common/clock.h"
#include "notify/notifier.h"

namespace trainwatch::notify {

struct EmailOptions {
  std::string smtp_url;            // smtp://host[:port] or smtps://host[:port] (implicit TLS)
  std::string from;                // "tw@example.com" or "Trainwatch <tw@example.com>"
  std::vector<std::string> to;     // at least one, same forms as `from`
  std::string username, password;  // empty: no AUTH
  bool starttls = false;           // smtp:// only: require STARTTLS before sending
  double timeout_seconds = 5;
};

// "a@example.com" out of "Name <a@example.com>" (or the trimmed text when it has no <>).
std::string EmailAddress(const std::string& text);

// The complete message EmailNotifier uploads for `n`, sent at `now` with `message_id` (without
// the angle brackets).
std::string EmailMessage(const Notification& n, const EmailOptions& options, double now,
                         const std::string& message_id);

// Thread-safe. `clock` must outlive the notifier. Send returns Unavailable for connection
// failures, timeouts and SMTP 4xx replies; InvalidArgument for SMTP 5xx replies (a rejected
// recipient, say), a refused login or an unusable URL.
class EmailNotifier final : public Notifier {
 public:
  EmailNotifier(EmailOptions options, const Clock& clock);
  Status Send(const Notification& n) override;

 private:
  const EmailOptions options_;
  const Clock& clock_;
  std::atomic<uint64_t> sent_{0};  // makes Message-IDs unique within the process
};

}  // namespace trainwatch::notify

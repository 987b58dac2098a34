// A tiny SMTP server on 127.0.0.1 for EmailNotifier tests: speaks EHLO/HELO, MAIL FROM, RCPT TO,
// DATA, RSET, NOOP and QUIT (no TLS, no AUTH) and records each message. Tests only.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "notify/testing/loopback_server.h"

namespace trainwatch::notify::test {

struct SmtpMessage {
  std::string mail_from;             // the envelope sender, without <>
  std::vector<std::string> rcpt_to;  // the envelope recipients, without <>
  std::string data;                  // the message as sent, dot-stuffing undone, CRLFs kept
};

// Serves one connection at a time on its own thread. Thread-safe.
class SmtpListener {
 public:
  // Binds 127.0.0.1 on a free port and starts serving; aborts if it cannot (tests only).
  SmtpListener();
  SmtpListener(const SmtpListener&) = delete;
  SmtpListener& operator=(const SmtpListener&) = delete;

  // "smtp://127.0.0.1:<port>".
  std::string Url() const;
  // From now on RCPT TO is answered with `code` (e.g. 550, 450); 250 by default.
  void SetRcptReply(int code);

  std::vector<SmtpMessage> Messages() const;
  bool WaitForMessages(size_t count, double timeout_seconds) const;

 private:
  void HandleConnection(int fd);

  std::atomic<int> rcpt_reply_{250};
  mutable Mutex mu_;
  mutable std::condition_variable cv_;
  std::vector<SmtpMessage> messages_ TW_GUARDED_BY(mu_);
  LoopbackServer server_;  // last: its thread calls into the members above
};

}  // namespace trainwatch::notify::test

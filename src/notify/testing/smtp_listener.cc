#include "notify/testing/smtp_listener.h"

#include <poll.h>
#include <sys/socket.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace trainwatch::notify::test {
namespace {

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// "<a@b>" inside "MAIL FROM:<a@b> SIZE=12".
std::string Address(const std::string& line) {
  size_t open = line.find('<');
  size_t close = line.find('>', open);
  if (open == std::string::npos || close == std::string::npos) return "";
  return line.substr(open + 1, close - open - 1);
}

// Reads CRLF-terminated lines from a socket.
class LineReader {
 public:
  explicit LineReader(int fd) : fd_(fd) {}
  bool Next(std::string* line) {
    while (true) {
      size_t end = buffer_.find("\r\n");
      if (end != std::string::npos) {
        *line = buffer_.substr(0, end);
        buffer_.erase(0, end + 2);
        return true;
      }
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 5000) <= 0) return false;
      char buf[4096];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return false;
      buffer_.append(buf, static_cast<size_t>(n));
    }
  }

 private:
  int fd_;
  std::string buffer_;
};

}  // namespace

SmtpListener::SmtpListener() : server_([this](int fd) { HandleConnection(fd); }) {}

std::string SmtpListener::Url() const {
  return "smtp://127.0.0.1:" + std::to_string(server_.port());
}

void SmtpListener::SetRcptReply(int code) { rcpt_reply_ = code; }

std::vector<SmtpMessage> SmtpListener::Messages() const {
  MutexLock lock(mu_);
  return messages_;
}

bool SmtpListener::WaitForMessages(size_t count, double timeout_seconds) const {
  MutexLock lock(mu_);
  return cv_.wait_for(lock.native(),
                      std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000)),
                      [&]() TW_REQUIRES(mu_) { return messages_.size() >= count; });
}

void SmtpListener::HandleConnection(int fd) {
  LineReader reader(fd);
  SmtpMessage current;
  if (!SendAll(fd, "220 127.0.0.1 ESMTP trainwatch-test\r\n")) return;
  std::string line;
  while (reader.Next(&line)) {
    std::string verb = Upper(line.substr(0, line.find(' ')));
    if (verb == "EHLO") {
      SendAll(fd, "250-127.0.0.1\r\n250-8BITMIME\r\n250 SMTPUTF8\r\n");
    } else if (verb == "HELO" || verb == "NOOP") {
      SendAll(fd, "250 OK\r\n");
    } else if (verb == "RSET") {
      current = SmtpMessage();
      SendAll(fd, "250 OK\r\n");
    } else if (verb == "MAIL") {
      current = SmtpMessage();
      current.mail_from = Address(line);
      SendAll(fd, "250 OK\r\n");
    } else if (verb == "RCPT") {
      int code = rcpt_reply_.load();
      if (code == 250) current.rcpt_to.push_back(Address(line));
      SendAll(fd, std::to_string(code) + (code == 250 ? " OK\r\n" : " recipient refused\r\n"));
    } else if (verb == "DATA") {
      if (current.rcpt_to.empty()) {
        SendAll(fd, "554 no valid recipients\r\n");
        continue;
      }
      SendAll(fd, "354 go ahead\r\n");
      std::string data;
      bool complete = false;
      while (reader.Next(&line)) {
        if (line == ".") {
          complete = true;
          break;
        }
        if (!line.empty() && line[0] == '.') line.erase(0, 1);  // undo dot-stuffing
        data += line + "\r\n";
      }
      if (!complete) return;
      current.data = std::move(data);
      {
        MutexLock lock(mu_);
        messages_.push_back(current);
      }
      cv_.notify_all();
      SendAll(fd, "250 queued\r\n");
    } else if (verb == "QUIT") {
      SendAll(fd, "221 bye\r\n");
      return;
    } else {
      SendAll(fd, "502 not implemented\r\n");
    }
  }
}

}  // namespace trainwatch::notify::test

#include "notify/testing/http_listener.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace trainwatch::notify::test {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  size_t e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

}  // namespace

uint16_t UnusedPort() {
  uint16_t port = 0;
  int fd = BindLoopback(&port);
  ::close(fd);  // nothing listens: connecting is refused (the port is not reused right away)
  return port;
}

HttpListener::HttpListener() : server_([this](int fd) { HandleConnection(fd); }) {}

std::string HttpListener::Url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(server_.port()) + path;
}

void HttpListener::FailNext(int count, int status) {
  MutexLock lock(mu_);
  for (int i = 0; i < count; ++i) scripted_.push_back(status);
}

void HttpListener::SetDefaultStatus(int status) {
  MutexLock lock(mu_);
  default_status_ = status;
}

std::vector<RecordedRequest> HttpListener::Requests() const {
  MutexLock lock(mu_);
  return requests_;
}

bool HttpListener::WaitForRequests(size_t count, double timeout_seconds) const {
  MutexLock lock(mu_);
  return cv_.wait_for(lock.native(),
                      std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000)),
                      [&]() TW_REQUIRES(mu_) { return requests_.size() >= count; });
}

int HttpListener::NextStatus() {
  MutexLock lock(mu_);
  if (scripted_.empty()) return default_status_;
  int status = scripted_.front();
  scripted_.pop_front();
  return status;
}

void HttpListener::HandleConnection(int fd) {
  std::string data;
  char buf[8192];
  size_t header_end = std::string::npos;
  auto read_more = [&] {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 2000) <= 0) return false;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return false;
    data.append(buf, static_cast<size_t>(n));
    return true;
  };
  while ((header_end = data.find("\r\n\r\n")) == std::string::npos) {
    if (!read_more()) return;
  }
  RecordedRequest req;
  size_t line_end = data.find("\r\n");
  std::string request_line = data.substr(0, line_end);
  size_t sp1 = request_line.find(' ');
  size_t sp2 = request_line.find(' ', sp1 + 1);
  req.method = request_line.substr(0, sp1);
  req.path = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
  size_t pos = line_end + 2;
  while (pos < header_end) {
    size_t end = data.find("\r\n", pos);
    std::string line = data.substr(pos, end - pos);
    size_t colon = line.find(':');
    if (colon != std::string::npos)
      req.headers[Lower(line.substr(0, colon))] = Trim(line.substr(colon + 1));
    pos = end + 2;
  }
  size_t length = 0;
  if (auto it = req.headers.find("content-length"); it != req.headers.end()) {
    length = std::strtoul(it->second.c_str(), nullptr, 10);
  }
  while (data.size() - (header_end + 4) < length) {
    if (!read_more()) return;
  }
  req.body = data.substr(header_end + 4, length);
  int status = NextStatus();
  {
    MutexLock lock(mu_);
    requests_.push_back(std::move(req));
  }
  cv_.notify_all();
  std::string body = status < 300 ? "ok" : "error " + std::to_string(status);
  SendAll(fd, "HTTP/1.1 " + std::to_string(status) +
                  " Status\r\nContent-Type: text/plain\r\n"
                  "Content-Length: " +
                  std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
}

}  // namespace trainwatch::notify::test

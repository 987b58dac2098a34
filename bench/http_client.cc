#include "http_client.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

namespace trainwatch::bench {
namespace {

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// Writes every byte of the iovecs, retrying on partial writes.
bool WriteAll(int fd, iovec* iov, int count, std::string* error) {
  while (count > 0) {
    ssize_t n = ::writev(fd, iov, count);
    if (n < 0) {
      if (errno == EINTR) continue;
      *error = std::string("write: ") + std::strerror(errno);
      return false;
    }
    while (count > 0 && static_cast<size_t>(n) >= iov->iov_len) {
      n -= static_cast<ssize_t>(iov->iov_len);
      ++iov;
      --count;
    }
    if (count > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + n;
      iov->iov_len -= static_cast<size_t>(n);
    }
  }
  return true;
}

}  // namespace

bool SplitHostPort(std::string_view text, std::string* host, uint16_t* port) {
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return false;
  *host = std::string(text.substr(0, colon));
  if (host->empty()) *host = "127.0.0.1";
  auto [ptr, ec] = std::from_chars(text.data() + colon + 1, text.data() + text.size(), *port);
  return ec == std::errc() && ptr == text.data() + text.size();
}

HttpConnection::~HttpConnection() { Close(); }

void HttpConnection::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  in_.clear();
}

bool HttpConnection::Connect(const std::string& host, uint16_t port, std::string* error) {
  Close();
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0) {
    *error = "resolving " + host + ": " + gai_strerror(rc);
    return false;
  }
  fd_ = ::socket(found->ai_family, found->ai_socktype, found->ai_protocol);
  bool ok = fd_ >= 0 && ::connect(fd_, found->ai_addr, found->ai_addrlen) == 0;
  ::freeaddrinfo(found);
  if (!ok) {
    *error = "connecting to " + host + ":" + std::to_string(port) + ": " + std::strerror(errno);
    Close();
    return false;
  }
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  host_header_ = host + ":" + std::to_string(port);
  return true;
}

bool HttpConnection::ReadMore(std::string* error) {
  char buf[64 * 1024];
  for (;;) {
    ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n > 0) {
      in_.append(buf, static_cast<size_t>(n));
      return true;
    }
    if (n < 0 && errno == EINTR) continue;
    *error = n == 0 ? "connection closed by server" : std::string("read: ") + std::strerror(errno);
    return false;
  }
}

bool HttpConnection::Request(std::string_view method, std::string_view target,
                             std::string_view content_type, std::string_view body, HttpReply* reply,
                             std::string* error) {
  if (fd_ < 0) {
    *error = "not connected";
    return false;
  }
  std::string head;
  head.reserve(256);
  head.append(method).append(" ").append(target).append(" HTTP/1.1\r\nHost: ").append(host_header_);
  head.append("\r\nConnection: keep-alive\r\n");
  if (!content_type.empty()) head.append("Content-Type: ").append(content_type).append("\r\n");
  if (!body.empty() || method == "POST") head.append("Content-Length: ").append(std::to_string(body.size())).append("\r\n");
  head.append("\r\n");
  iovec iov[2] = {{head.data(), head.size()}, {const_cast<char*>(body.data()), body.size()}};
  if (!WriteAll(fd_, iov, body.empty() ? 1 : 2, error)) {
    Close();
    return false;
  }

  size_t header_end;
  while ((header_end = in_.find("\r\n\r\n")) == std::string::npos) {
    if (!ReadMore(error)) {
      Close();
      return false;
    }
  }
  std::string_view headers(in_.data(), header_end);
  // "HTTP/1.1 200 OK"
  if (headers.size() < 12 || !headers.starts_with("HTTP/1.")) {
    *error = "malformed status line";
    Close();
    return false;
  }
  std::from_chars(headers.data() + 9, headers.data() + 12, reply->status);
  bool chunked = false;
  int64_t content_length = -1;
  size_t pos = headers.find("\r\n");
  while (pos != std::string_view::npos && pos < headers.size()) {
    size_t next = headers.find("\r\n", pos + 2);
    std::string_view line = headers.substr(pos + 2, next == std::string_view::npos ? std::string_view::npos : next - pos - 2);
    size_t colon = line.find(':');
    if (colon != std::string_view::npos) {
      std::string_view name = line.substr(0, colon);
      std::string_view value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      if (IEquals(name, "content-length")) std::from_chars(value.data(), value.data() + value.size(), content_length);
      if (IEquals(name, "transfer-encoding") && value.find("chunked") != std::string_view::npos) chunked = true;
    }
    pos = next;
  }
  if (reply->status == 204 || reply->status == 304 || method == "HEAD") content_length = 0;
  if (!ReadBody(header_end + 4, chunked, content_length, reply, error)) {
    Close();
    return false;
  }
  return true;
}

bool HttpConnection::ReadBody(size_t start, bool chunked, int64_t content_length, HttpReply* reply,
                              std::string* error) {
  reply->body.clear();
  if (!chunked) {
    if (content_length < 0) {
      *error = "response without Content-Length (close-delimited bodies are not supported)";
      return false;
    }
    while (in_.size() < start + static_cast<size_t>(content_length)) {
      if (!ReadMore(error)) return false;
    }
    reply->body.assign(in_, start, static_cast<size_t>(content_length));
    in_.erase(0, start + static_cast<size_t>(content_length));
    return true;
  }
  size_t pos = start;
  for (;;) {
    size_t line_end;
    while ((line_end = in_.find("\r\n", pos)) == std::string::npos) {
      if (!ReadMore(error)) return false;
    }
    size_t size = 0;
    std::from_chars(in_.data() + pos, in_.data() + line_end, size, 16);
    pos = line_end + 2;
    while (in_.size() < pos + size + 2) {
      if (!ReadMore(error)) return false;
    }
    reply->body.append(in_, pos, size);
    pos += size + 2;
    if (size == 0) break;  // no trailers expected
  }
  in_.erase(0, pos);
  return true;
}

}  // namespace trainwatch::bench

// A minimal blocking HTTP/1.1 client over one keep-alive TCP connection, for benchmarks: small
// enough that its own cost is negligible beside the server's. No TLS, no redirects, no pipelining.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace trainwatch::bench {

struct HttpReply {
  int status = 0;
  std::string body;
};

// Splits "host:port"; false if the text has no port.
bool SplitHostPort(std::string_view text, std::string* host, uint16_t* port);

// One connection. Not thread-safe: use one per thread. Copying is disabled (it owns a socket).
class HttpConnection {
 public:
  HttpConnection() = default;
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  // Connects to an IPv4 host (numeric or resolvable) with TCP_NODELAY; false with `error` set.
  bool Connect(const std::string& host, uint16_t port, std::string* error);

  // Sends one request and reads the whole response (Content-Length, chunked, or none for 204 and
  // 304). `content_type` may be empty for requests without a body. On an I/O or protocol error
  // returns false with `error` set; the connection is then closed and must not be reused.
  bool Request(std::string_view method, std::string_view target, std::string_view content_type,
               std::string_view body, HttpReply* reply, std::string* error);

 private:
  bool ReadMore(std::string* error);
  bool ReadBody(size_t header_end, bool chunked, int64_t content_length, HttpReply* reply,
                std::string* error);
  void Close();

  int fd_ = -1;
  std::string host_header_;
  std::string in_;  // bytes received and not yet consumed
};

}  // namespace trainwatch::bench

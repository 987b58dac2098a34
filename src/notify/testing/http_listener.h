// A tiny HTTP/1.1 server on 127.0.0.1 for notifier tests: records every request and answers with
// a scripted status. Tests only.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "notify/testing/loopback_server.h"

namespace trainwatch::notify::test {

struct RecordedRequest {
  std::string method, path;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
};

// Serves one connection at a time on its own thread, closing each after the reply.
// Thread-safe.
class HttpListener {
 public:
  // Binds 127.0.0.1 on a free port and starts serving; aborts if it cannot (tests only).
  HttpListener();
  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;

  uint16_t port() const { return server_.port(); }
  // "http://127.0.0.1:<port>" + path.
  std::string Url(const std::string& path = "") const;

  // The next `count` requests get `status`; after them, the default status.
  void FailNext(int count, int status = 500);
  // The status answered when nothing is scripted (200 at first).
  void SetDefaultStatus(int status);

  std::vector<RecordedRequest> Requests() const;
  // Waits until at least `count` requests were recorded; false on timeout.
  bool WaitForRequests(size_t count, double timeout_seconds) const;

 private:
  void HandleConnection(int fd);
  int NextStatus();

  mutable Mutex mu_;
  mutable std::condition_variable cv_;
  std::vector<RecordedRequest> requests_ TW_GUARDED_BY(mu_);
  std::deque<int> scripted_ TW_GUARDED_BY(mu_);
  int default_status_ TW_GUARDED_BY(mu_) = 200;
  LoopbackServer server_;  // last: its thread calls into the members above
};

// A loopback port with nothing listening on it (connections are refused).
uint16_t UnusedPort();

}  // namespace trainwatch::notify::test
